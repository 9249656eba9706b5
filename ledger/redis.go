package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configures a RedisStore. The zero value is usable: every
// zero field takes the default of DefaultRedisOptions.
type RedisOptions struct {
	// Prefix starts every key of the store; "" means "vigil:ledger:". It
	// may not contain '{' or '}', which would break the hash tags.
	Prefix string
	// MaxBatch is the most records of one agent sent in one script call;
	// 0 means 256. It may not exceed 1024 (the script passes a batch's
	// fields to one HSET, within Lua's stack limit).
	MaxBatch int
	// Timeout bounds each Redis call of an append (the script, a head
	// read); 0 means 1s. A call that takes longer fails the append with
	// an error wrapping ErrUnavailable.
	Timeout time.Duration
	// Breaker configures the circuit breaker in front of the appends.
	Breaker BreakerOptions
}

// DefaultRedisOptions returns the options with every default filled in.
func DefaultRedisOptions() RedisOptions {
	return RedisOptions{Prefix: "vigil:ledger:", MaxBatch: 256, Timeout: time.Second, Breaker: DefaultBreakerOptions()}
}

// Validate reports options that cannot work.
func (o RedisOptions) Validate() error {
	if strings.ContainsAny(o.Prefix, "{}") {
		return fmt.Errorf("ledger: redis prefix %q contains '{' or '}'", o.Prefix)
	}
	if o.MaxBatch < 0 || o.MaxBatch > maxRedisBatch {
		return fmt.Errorf("ledger: redis max batch %d is not within 0..%d", o.MaxBatch, maxRedisBatch)
	}
	if o.Timeout < 0 || o.Breaker.OpenFor < 0 {
		return errors.New("ledger: redis timeout and breaker open period must not be negative")
	}
	return nil
}

// redisAttempts bounds how often one batch is rebuilt on a moved head
// before its appends fail with ErrHeadMoved.
const redisAttempts = 50

// maxRedisBatch bounds RedisOptions.MaxBatch.
const maxRedisBatch = 1024

// readChunk is how many records one HMGET reads.
const readChunk = 256

// RedisStore is the Store kept in Redis, shared by any number of sidecars.
// Each agent's keys carry the hash tag {agent}, so a Redis Cluster keeps
// them on one slot:
//
//	<prefix>{<agent>}:head       hash: seq, hash (absent: {0, ZeroHash})
//	<prefix>{<agent>}:e          hash: decimal sequence -> encoded record
//	<prefix>{<agent>}:v:<VERDICT> sorted set of the sequences with that verdict
//	<prefix>agents               set of agent ids with entries (no hash tag)
//
// An agent id containing '{', '}' or '%' is written in the key with those
// bytes percent-encoded, and the empty agent id as "%", so that the tag is
// always exactly the agent. A record is encoded as a version byte, then
// prev_hash, hash, verdict and action id as uvarint-length-prefixed
// strings, then the body.
//
// Appends for one agent in one process are batched: while one script call
// is in flight, further appends queue, and the next call carries all of
// them (up to MaxBatch), built in order on the head the previous one left.
// The script writes the batch only if the stored head is still the one it
// was built on, so two sidecars writing for one agent never fork the chain;
// on a moved head the batch is rebuilt (build is called again) on the new
// head. Each process caches the heads it wrote, so an append costs no read.
//
// The set of agents is updated after an agent's first successful append in
// each process, outside the script (it is on another Cluster slot): a
// process that dies between the two leaves the agent unlisted until a
// process that has not listed it yet (a restarted one, say) appends for it.
type RedisStore struct {
	client redis.UniversalClient
	opts   RedisOptions
	br     *redisBreaker // in front of the appends' calls
	agents sync.Map      // agent id -> *redisAgent

	mu     sync.RWMutex // guards closed against active.Add
	closed bool
	active sync.WaitGroup // Append calls in progress
}

var _ Store = (*RedisStore)(nil)

// NewRedisStore returns a store on client, which the caller keeps owning:
// Close does not close it.
func NewRedisStore(client redis.UniversalClient, opts RedisOptions) (*RedisStore, error) {
	if client == nil {
		return nil, errors.New("ledger: redis store needs a client")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	def := DefaultRedisOptions()
	if opts.Prefix == "" {
		opts.Prefix = def.Prefix
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = def.MaxBatch
	}
	if opts.Timeout == 0 {
		opts.Timeout = def.Timeout
	}
	opts.Breaker = opts.Breaker.withDefaults()
	return &RedisStore{client: client, opts: opts, br: newRedisBreaker(opts.Breaker)}, nil
}

// redisAgent is one agent's append queue. The fields after queue belong to
// the current leader: the append that sends the next batch. Leadership
// passes from one append to the next through res, under mu.
type redisAgent struct {
	keys agentKeys

	mu    sync.Mutex
	queue []*redisAppend
	busy  bool // an append leads; queued appends wait for it

	head      Head // the head after this process's last write
	headKnown bool
	listed    bool // the agent is in the agents set
}

// redisAppend is one waiting Append call.
type redisAppend struct {
	ctx     context.Context
	build   func(Head) (*Record, error)
	rec     *Record // built for the current attempt
	leading bool    // leadership was handed to it (guarded by redisAgent.mu)
	res     chan redisResult
}

// redisResult ends an append, or (lead) makes it the leader.
type redisResult struct {
	rec  *Record
	err  error
	lead bool
}

// Append implements Store.
func (s *RedisStore) Append(ctx context.Context, agentID string, build func(Head) (*Record, error)) (*Record, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	s.active.Add(1)
	s.mu.RUnlock()
	defer s.active.Done()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	a := s.agent(agentID)
	p := &redisAppend{ctx: ctx, build: build, res: make(chan redisResult, 1)}
	a.mu.Lock()
	a.queue = append(a.queue, p)
	lead := !a.busy
	a.busy = true
	a.mu.Unlock()
	if !lead {
		var r redisResult
		select {
		case r = <-p.res:
		case <-ctx.Done():
			a.mu.Lock()
			if i := slices.Index(a.queue, p); i >= 0 && !p.leading {
				a.queue = slices.Delete(a.queue, i, i+1)
				a.mu.Unlock()
				return nil, ctx.Err()
			}
			a.mu.Unlock()
			// It is in a batch already (its outcome is coming) or it
			// leads now (and the batch fails it for its context).
			r = <-p.res
		}
		if !r.lead {
			return r.rec, r.err
		}
	}
	s.lead(context.WithoutCancel(ctx), agentID, a)
	r := <-p.res
	return r.rec, r.err
}

// agent returns the queue of agentID, creating it.
func (s *RedisStore) agent(agentID string) *redisAgent {
	if a, ok := s.agents.Load(agentID); ok {
		return a.(*redisAgent)
	}
	a, _ := s.agents.LoadOrStore(agentID, &redisAgent{keys: s.keysOf(agentID)})
	return a.(*redisAgent)
}

// lead sends one batch (the leader first) and hands leadership to the
// next queued append, if any. ctx is not cancelled by the leader's caller:
// a batch carries other callers' appends.
func (s *RedisStore) lead(ctx context.Context, agentID string, a *redisAgent) {
	a.mu.Lock()
	n := min(len(a.queue), s.opts.MaxBatch)
	batch := slices.Clone(a.queue[:n])
	a.queue = slices.Delete(a.queue, 0, n)
	a.mu.Unlock()

	s.appendBatch(ctx, agentID, a, batch)

	a.mu.Lock()
	if len(a.queue) > 0 {
		next := a.queue[0]
		next.leading = true
		next.res <- redisResult{lead: true}
	} else {
		a.busy = false
	}
	a.mu.Unlock()
}

// appendBatch builds and writes batch, and ends every append in it.
func (s *RedisStore) appendBatch(ctx context.Context, agentID string, a *redisAgent, batch []*redisAppend) {
	if !a.headKnown {
		var h Head
		err := s.call(ctx, func(ctx context.Context) (err error) {
			h, err = s.readHead(ctx, agentID)
			return err
		})
		if err != nil {
			for _, p := range batch {
				p.res <- redisResult{err: err}
			}
			return
		}
		a.head, a.headKnown = h, true
	}
	for attempt := 1; ; attempt++ {
		batch = buildBatch(agentID, a.head, batch)
		if len(batch) == 0 {
			return
		}
		recs := make([]*Record, len(batch))
		for i, p := range batch {
			recs[i] = p.rec
		}
		last := recs[len(recs)-1]
		var (
			written bool
			moved   Head
		)
		err := s.call(ctx, func(ctx context.Context) (err error) {
			written, moved, err = s.runAppend(ctx, a.keys, a.head, recs)
			return err
		})
		if err != nil && !errors.Is(err, ErrCorrupt) && !refused(err) {
			// The outcome is unknown (the reply may be what was lost):
			// the head tells whether the batch was written.
			var h Head
			herr := s.call(ctx, func(ctx context.Context) (err error) {
				h, err = s.readHead(ctx, agentID)
				return err
			})
			if herr == nil && h.Sequence == last.Sequence && h.Hash == last.Hash {
				written, err = true, nil
			}
		}
		if err != nil {
			a.headKnown = false
			for _, p := range batch {
				p.res <- redisResult{err: fmt.Errorf("ledger: append to redis: %w", err)}
			}
			return
		}
		if written {
			a.head = Head{Sequence: last.Sequence, Hash: last.Hash}
			if !a.listed {
				// Idempotent; on failure the next batch tries again.
				a.listed = s.client.SAdd(ctx, s.opts.Prefix+"agents", agentID).Err() == nil
			}
			for _, p := range batch {
				p.res <- redisResult{rec: p.rec}
			}
			return
		}
		a.head = moved
		if attempt == redisAttempts {
			for _, p := range batch {
				p.res <- redisResult{err: fmt.Errorf("%w: gave up after %d attempts", ErrHeadMoved, attempt)}
			}
			return
		}
		time.Sleep(rand.N(time.Duration(attempt) * 50 * time.Microsecond))
	}
}

// buildBatch calls build for every append of batch, in order, each on the
// head the previous one leaves. An append whose context is done, whose
// build fails or whose record does not follow is ended with the error and
// dropped; buildBatch returns the rest.
func buildBatch(agentID string, head Head, batch []*redisAppend) []*redisAppend {
	kept := batch[:0]
	for _, p := range batch {
		rec, err := buildOne(agentID, head, p)
		if err != nil {
			p.res <- redisResult{err: err}
			continue
		}
		p.rec = rec
		head = Head{Sequence: rec.Sequence, Hash: rec.Hash}
		kept = append(kept, p)
	}
	clear(batch[len(kept):])
	return kept
}

// buildOne calls p's build on head and checks the record. A panic in
// build fails this append only, never the appends batched with it.
func buildOne(agentID string, head Head, p *redisAppend) (rec *Record, err error) {
	if err := p.ctx.Err(); err != nil {
		return nil, err
	}
	defer func() {
		if v := recover(); v != nil {
			rec, err = nil, fmt.Errorf("ledger: build of %s %d panicked: %v", agentID, head.Sequence+1, v)
		}
	}()
	rec, err = p.build(head)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("ledger: build of %s %d returned no record", agentID, head.Sequence+1)
	}
	if err := checkLink(head, rec); err != nil {
		return nil, err
	}
	if rec.AgentID == "" {
		rec.AgentID = agentID
	} else if rec.AgentID != agentID {
		return nil, fmt.Errorf("ledger: record of agent %q appended to agent %q", rec.AgentID, agentID)
	}
	if len(rec.Body) == 0 {
		return nil, fmt.Errorf("ledger: record %s %d has no body", agentID, rec.Sequence)
	}
	return rec, nil
}

// Head implements Store.
func (s *RedisStore) Head(ctx context.Context, agentID string) (Head, error) {
	if s.isClosed() {
		return Head{}, ErrClosed
	}
	if err := s.refuseWhileOpen(); err != nil {
		return Head{}, err
	}
	return s.readHead(ctx, agentID)
}

// readHead reads agentID's head (also for appends finishing after Close).
func (s *RedisStore) readHead(ctx context.Context, agentID string) (Head, error) {
	v, err := s.client.HMGet(ctx, s.keysOf(agentID).head, "seq", "hash").Result()
	if err != nil {
		return Head{}, fmt.Errorf("ledger: read head of %s: %w", agentID, err)
	}
	if v[0] == nil {
		return Head{Sequence: 0, Hash: ZeroHash}, nil
	}
	seqStr, _ := v[0].(string)
	hash, _ := v[1].(string)
	seq, err := strconv.ParseInt(seqStr, 10, 64)
	if err != nil || seq < 1 || hash == "" {
		return Head{}, fmt.Errorf("%w: head of %s is %q, %q", ErrCorrupt, agentID, seqStr, hash)
	}
	return Head{Sequence: seq, Hash: hash}, nil
}

// Get implements Store.
func (s *RedisStore) Get(ctx context.Context, agentID string, seq int64) (*Record, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if seq < 1 {
		return nil, ErrNotFound
	}
	v, err := s.client.HGet(ctx, s.keysOf(agentID).entries, strconv.FormatInt(seq, 10)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: read %s %d: %w", agentID, seq, err)
	}
	return decodeRecord(agentID, seq, v)
}

// Range implements Store.
func (s *RedisStore) Range(ctx context.Context, agentID string, from, to int64, fn func(*Record) error) error {
	h, err := s.Head(ctx, agentID)
	if err != nil {
		return err
	}
	from, to = max(from, 1), min(to, h.Sequence)
	for lo := from; lo <= to; lo += readChunk {
		seqs := make([]int64, 0, min(to-lo+1, readChunk))
		for seq := lo; seq <= to && seq < lo+readChunk; seq++ {
			seqs = append(seqs, seq)
		}
		recs, err := s.getMany(ctx, agentID, seqs)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Latest implements Store.
func (s *RedisStore) Latest(ctx context.Context, agentID, verdict string, limit int) ([]*Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := s.refuseWhileOpen(); err != nil {
		return nil, err
	}
	recs, err := s.latest(ctx, agentID, verdict, limit)
	if unreachable(err) && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotFound) && ctx.Err() == nil {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return recs, err
}

func (s *RedisStore) latest(ctx context.Context, agentID, verdict string, limit int) ([]*Record, error) {
	if verdict != "" {
		if s.isClosed() {
			return nil, ErrClosed
		}
		members, err := s.client.ZRevRange(ctx, s.keysOf(agentID).verdict(verdict), 0, int64(limit-1)).Result()
		if err != nil {
			return nil, fmt.Errorf("ledger: read %s index of %s: %w", verdict, agentID, err)
		}
		seqs := make([]int64, len(members))
		for i, m := range members {
			if seqs[i], err = strconv.ParseInt(m, 10, 64); err != nil {
				return nil, fmt.Errorf("%w: %s index of %s holds %q", ErrCorrupt, verdict, agentID, m)
			}
		}
		return s.getMany(ctx, agentID, seqs)
	}
	h, err := s.Head(ctx, agentID)
	if err != nil {
		return nil, err
	}
	var out []*Record
	for hi := h.Sequence; hi >= 1 && len(out) < limit; hi -= readChunk {
		seqs := make([]int64, 0, min(hi, readChunk, int64(limit-len(out))))
		for seq := hi; seq >= 1 && len(seqs) < cap(seqs); seq-- {
			seqs = append(seqs, seq)
		}
		recs, err := s.getMany(ctx, agentID, seqs)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// getMany reads the records seqs (at most a chunk) in one HMGET, in the
// order given; a missing one is ErrCorrupt, since callers ask only for
// sequences the head or an index vouches for.
func (s *RedisStore) getMany(ctx context.Context, agentID string, seqs []int64) ([]*Record, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	if s.isClosed() {
		return nil, ErrClosed
	}
	fields := make([]string, len(seqs))
	for i, seq := range seqs {
		fields[i] = strconv.FormatInt(seq, 10)
	}
	vals, err := s.client.HMGet(ctx, s.keysOf(agentID).entries, fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("ledger: read records of %s: %w", agentID, err)
	}
	out := make([]*Record, len(seqs))
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: record %s %d is missing below the head", ErrCorrupt, agentID, seqs[i])
		}
		if out[i], err = decodeRecord(agentID, seqs[i], str); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Agents implements Store.
func (s *RedisStore) Agents(ctx context.Context) ([]string, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	agents, err := s.client.SMembers(ctx, s.opts.Prefix+"agents").Result()
	if err != nil {
		return nil, fmt.Errorf("ledger: read agents: %w", err)
	}
	slices.Sort(agents)
	return agents, nil
}

// Close implements Store: it refuses new calls and waits for the appends
// in progress. It does not close the client, which its creator owns.
func (s *RedisStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.active.Wait()
	return nil
}

func (s *RedisStore) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// agentKeys are the keys of one agent.
type agentKeys struct {
	head, entries string
	base          string // "<prefix>{<agent>}:"
}

func (k agentKeys) verdict(v string) string { return k.base + "v:" + v }

// keysOf returns agentID's keys, all under the hash tag {agentID}.
func (s *RedisStore) keysOf(agentID string) agentKeys {
	base := s.opts.Prefix + "{" + tagOf(agentID) + "}:"
	return agentKeys{head: base + "head", entries: base + "e", base: base}
}

// tagOf returns agentID as it appears in a hash tag: '{', '}' and '%'
// percent-encoded, and the empty id as "%" (Redis ignores an empty tag).
func tagOf(agentID string) string {
	if agentID == "" {
		return "%"
	}
	if !strings.ContainsAny(agentID, "{}%") {
		return agentID
	}
	r := strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")
	return r.Replace(agentID)
}
