package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configures a RedisStore. The zero value is usable: every
// zero field takes the default of DefaultRedisOptions.
type RedisOptions struct {
	// Prefix names the store's keys; "" means "vigil:cp". It is the hash
	// tag of every key ("{vigil:cp}:directives", ...), so a Redis Cluster
	// keeps the whole fleet's control plane on one slot. It may not
	// contain '{' or '}'.
	Prefix string
	// MaxEvents is roughly how many provenance events the stream keeps:
	// XADD trims it with MAXLEN ~ MaxEvents, dropping the oldest (Redis
	// trims whole stream nodes, so a little more may stay); 0 means
	// 100000.
	MaxEvents int64
	// Timeout bounds each Redis call the store makes (one page of events
	// for Events), so that a caller fails fast on an unreachable Redis;
	// 0 means 500ms. It is applied through the call's context, which
	// go-redis honours on the socket only when the client was built with
	// ContextTimeoutEnabled; otherwise the client's own read and write
	// timeouts apply as well.
	Timeout time.Duration
	// HealthCheck is how often Watch pings Redis on its subscription when
	// no message came, to notice a dead connection; 0 means one second.
	HealthCheck time.Duration
	// Breaker configures the circuit breaker every call but Watch goes
	// through (see BreakerOptions); zero fields take the defaults.
	Breaker BreakerOptions
}

// DefaultRedisOptions returns the options with every default filled in.
func DefaultRedisOptions() RedisOptions {
	return RedisOptions{Prefix: "vigil:cp", MaxEvents: 100_000, Timeout: 500 * time.Millisecond, HealthCheck: time.Second,
		Breaker: DefaultBreakerOptions()}
}

// Validate reports options that cannot work.
func (o RedisOptions) Validate() error {
	var errs []error
	if strings.ContainsAny(o.Prefix, "{}") {
		errs = append(errs, fmt.Errorf("controlplane: redis prefix %q contains '{' or '}'", o.Prefix))
	}
	if o.MaxEvents < 0 {
		errs = append(errs, fmt.Errorf("controlplane: redis max events must not be negative, got %d", o.MaxEvents))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("controlplane: redis timeout must not be negative, got %v", o.Timeout))
	}
	if o.HealthCheck < 0 {
		errs = append(errs, fmt.Errorf("controlplane: redis health check must not be negative, got %v", o.HealthCheck))
	}
	if err := o.Breaker.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// eventPage is how many stream entries one XREVRANGE of Events reads when
// it filters (or has no limit).
const eventPage = 256

// saveScript writes a directive and signals the change in one atomic step
// (KEYS[1] the directives hash; ARGV: id, encoding, channel). PUBLISH from a
// script is allowed on a Redis Cluster and reaches every node.
var saveScript = redis.NewScript(`
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
`)

// RedisStore is the Store kept in Redis, shared by any number of sidecars,
// and a Watcher: it tells each sidecar's Plane when the directives changed.
// With the default prefix its keys are
//
//	{vigil:cp}:directives  hash: directive id -> the directive's JSON (as FileStore stores it)
//	{vigil:cp}:events      stream of provenance events, trimmed to about MaxEvents
//	{vigil:cp}:changed     pub/sub channel: the id of each saved directive
//	{vigil:cp}:agents      hash: agent id -> the agent's state snapshot (SnapshotStore)
//	{vigil:cp}:approvals   hash: approval id -> the approval's JSON (ApprovalStore; approvals_redis.go)
//	{vigil:cp}:approvals:pending   sorted set of the pending approvals' ids
//	{vigil:cp}:approvals:decided   pub/sub channel: the id of each approval decided or expired
//
// all under one hash tag (the prefix), so a Redis Cluster keeps them on one
// slot. SaveDirective writes the hash field and publishes the id on the
// channel in one script, so the signal never precedes the write. A stream
// entry holds the event's JSON in field "e" and, for filtering without
// decoding, its context code, actor and target in "c", "a" and "t".
//
// Costs: LoadDirectives (which each Plane runs on every signal) reads the
// whole hash, expired directives included, which suits the hundreds or
// thousands of directives operators issue. Events reads the stream newest
// first with XREVRANGE and filters in the client, so a filter that matches
// rarely reads the whole stream (up to MaxEvents entries, in pages of 256)
// before it returns; a Limit stops it early. XREVRANGE with an exclusive
// bound needs Redis 6.2 or newer.
//
// Failure behaviour: every call is bounded by RedisOptions.Timeout and fails
// fast when Redis is unreachable (go-redis retries a failed command a few
// times within it); a Plane keeps the overlays it has and re-reads when
// Redis answers again. Every call but Watch (whose subscription reconnects
// on its own) goes through a circuit breaker (RedisOptions.Breaker): once
// Redis has failed several calls in a row, calls fail at once with
// ErrUnavailable instead of each waiting out the timeout, until a probe
// succeeds. Healthy and Check report the breaker's state.
type RedisStore struct {
	client redis.UniversalClient
	opts   RedisOptions

	directivesKey, eventsKey, channel string
	br                                *breaker

	closeOnce sync.Once
	done      chan struct{} // closed by Close
}

var (
	_ Store   = (*RedisStore)(nil)
	_ Watcher = (*RedisStore)(nil)
)

// NewRedisStore returns a store on client, which the caller keeps owning:
// Close does not close it. It does not contact Redis.
func NewRedisStore(client redis.UniversalClient, opts RedisOptions) (*RedisStore, error) {
	if client == nil {
		return nil, errors.New("controlplane: redis store needs a client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	def := DefaultRedisOptions()
	if opts.Prefix == "" {
		opts.Prefix = def.Prefix
	}
	if opts.MaxEvents == 0 {
		opts.MaxEvents = def.MaxEvents
	}
	if opts.Timeout == 0 {
		opts.Timeout = def.Timeout
	}
	if opts.HealthCheck == 0 {
		opts.HealthCheck = def.HealthCheck
	}
	opts.Breaker = opts.Breaker.withDefaults()
	base := "{" + opts.Prefix + "}:"
	return &RedisStore{client: client, opts: opts,
		directivesKey: base + "directives", eventsKey: base + "events", channel: base + "changed",
		br:   newBreaker(base+"breaker", opts.Breaker),
		done: make(chan struct{})}, nil
}

// Channel returns the pub/sub channel on which the store signals changes.
func (s *RedisStore) Channel() string { return s.channel }

func (s *RedisStore) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// call returns ctx bounded by the store's timeout, or ErrClosed.
func (s *RedisStore) call(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if s.closed() {
		return nil, nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.opts.Timeout, errStoreTimeout)
	return ctx, cancel, nil
}

// SaveDirective implements Store: it writes d and publishes its id on the
// channel, atomically.
func (s *RedisStore) SaveDirective(ctx context.Context, d Directive) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("controlplane: encode directive %s: %w", d.ID, err)
	}
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	err = s.br.do(ctx, func() error {
		return saveScript.Run(ctx, s.client, []string{s.directivesKey}, d.ID, b, s.channel).Err()
	})
	if err != nil {
		return fmt.Errorf("controlplane: save directive %s to redis: %w", d.ID, err)
	}
	return nil
}

// LoadDirectives implements Store.
func (s *RedisStore) LoadDirectives(ctx context.Context) ([]Directive, error) {
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var all map[string]string
	err = s.br.do(ctx, func() (err error) {
		all, err = s.client.HGetAll(ctx, s.directivesKey).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("controlplane: load directives from redis: %w", err)
	}
	out := make([]Directive, 0, len(all))
	for id, raw := range all {
		var d Directive
		if err := json.Unmarshal([]byte(raw), &d); err != nil || d.ID == "" {
			return nil, fmt.Errorf("%w: redis %s: directive %s unreadable", ErrCorrupt, s.directivesKey, id)
		}
		out = append(out, d)
	}
	return out, nil
}

// AppendEvent implements Store.
func (s *RedisStore) AppendEvent(ctx context.Context, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("controlplane: encode event %s: %w", e.ID, err)
	}
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	err = s.br.do(ctx, func() error {
		return s.client.XAdd(ctx, &redis.XAddArgs{
			Stream: s.eventsKey, MaxLen: s.opts.MaxEvents, Approx: true,
			Values: []any{"e", b, "c", e.ContextCode, "a", e.Actor, "t", e.Target},
		}).Err()
	})
	if err != nil {
		return fmt.Errorf("controlplane: append event %s to redis: %w", e.ID, err)
	}
	return nil
}

// Events implements Store. It pages through the stream newest first and
// filters in the client (see the costs on RedisStore).
func (s *RedisStore) Events(ctx context.Context, f EventFilter) ([]Event, error) {
	page := int64(eventPage)
	if f.Limit > 0 && f.ContextCode == "" && f.Actor == "" && f.Target == "" {
		page = int64(min(f.Limit, 4*eventPage))
	}
	out := []Event{}
	end := "+"
	for {
		msgs, err := s.eventPage(ctx, end, page)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if !matchFields(f, m.Values) {
				continue
			}
			raw, _ := m.Values["e"].(string)
			var e Event
			if err := json.Unmarshal([]byte(raw), &e); err != nil {
				return nil, fmt.Errorf("%w: redis %s: event %s unreadable", ErrCorrupt, s.eventsKey, m.ID)
			}
			if !f.Match(&e) {
				continue
			}
			out = append(out, e)
			if f.Limit > 0 && len(out) == f.Limit {
				return out, nil
			}
		}
		if int64(len(msgs)) < page {
			return out, nil
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
}

// eventPage reads up to n stream entries, newest first, from end on.
func (s *RedisStore) eventPage(ctx context.Context, end string, n int64) ([]redis.XMessage, error) {
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var msgs []redis.XMessage
	err = s.br.do(ctx, func() (err error) {
		msgs, err = s.client.XRevRangeN(ctx, s.eventsKey, end, "-", n).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("controlplane: read events from redis: %w", err)
	}
	return msgs, nil
}

// matchFields applies f to a stream entry's plain fields, so that entries f
// rejects are not decoded. An entry lacking them is decoded and checked.
func matchFields(f EventFilter, v map[string]any) bool {
	for _, c := range [...]struct{ want, field string }{{f.ContextCode, "c"}, {f.Actor, "a"}, {f.Target, "t"}} {
		if c.want == "" {
			continue
		}
		if got, ok := v[c.field].(string); ok && got != c.want {
			return false
		}
	}
	return true
}

// Watch implements Watcher: it subscribes to the store's channel and calls
// changed for every message (another process, or this one, saved a
// directive) and after every subscription, the first one and each one
// go-redis makes when it reconnects, because pub/sub drops what is
// published while a subscriber is disconnected. It returns nil when ctx
// ends, ErrClosed when the store is closed, and an error when the client
// is closed.
func (s *RedisStore) Watch(ctx context.Context, changed func()) error {
	return s.subscribe(ctx, s.channel, changed, func(string) { changed() })
}

// subscribe follows one pub/sub channel until ctx ends: subscribed runs
// after every (re)subscription — pub/sub loses messages while disconnected,
// so a subscriber must re-read then — and message runs for every message.
func (s *RedisStore) subscribe(ctx context.Context, channel string, subscribed func(), message func(payload string)) error {
	if s.closed() {
		return ErrClosed
	}
	subCtx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	// A failed first subscription is retried by the PubSub as it receives.
	ps := s.client.Subscribe(subCtx, channel)
	cancel()
	defer ps.Close()
	ch := ps.ChannelWithSubscriptions(
		redis.WithChannelHealthCheckInterval(s.opts.HealthCheck),
		redis.WithChannelPingTimeout(s.opts.Timeout),
		redis.WithChannelReconnectTimeout(s.opts.Timeout))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return ErrClosed
		case m, ok := <-ch:
			if !ok {
				return fmt.Errorf("controlplane: redis subscription to %s ended: %w", channel, redis.ErrClosed)
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					subscribed()
				}
			case *redis.Message:
				message(m.Payload)
			}
		}
	}
}

// Close stops the store's watchers; other methods return ErrClosed
// afterwards. It does not close the client. Closing twice is harmless.
func (s *RedisStore) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	return nil
}
