package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// ErrUnavailable: the store refused a call without trying it, because its
// circuit breaker is open (Redis failed BreakerOptions.Failures calls in a
// row) or half-open with its one probe already under way. The error wraps
// the breaker's own (gobreaker.ErrOpenState or ErrTooManyRequests).
var ErrUnavailable = errors.New("controlplane: redis unavailable")

// BreakerOptions configures the circuit breaker (gobreaker) in front of a
// RedisStore. The zero value takes the defaults of DefaultBreakerOptions.
//
// The breaker is closed while Redis answers: every call goes through. After
// Failures calls in a row have failed — Redis unreachable, the connection
// refused or cut, RedisOptions.Timeout elapsed, or a reply saying the server
// cannot serve (LOADING, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, max clients) —
// it opens, and for OpenFor every call fails at once with ErrUnavailable,
// so no caller waits on a dead Redis. Then it is half-open: one call goes
// through as a probe (the others still fail at once); its success closes
// the breaker, its failure opens it again for OpenFor. Other error replies
// (a script error, a wrong type) and redis.Nil mean Redis answered and count
// as successes; a call that ends because its caller's context ended counts
// neither way.
type BreakerOptions struct {
	// Failures is how many calls in a row must fail to open the breaker;
	// 0 means 5.
	Failures uint32
	// OpenFor is how long the open breaker refuses calls before it lets a
	// probe through; 0 means 2s.
	OpenFor time.Duration
}

// DefaultBreakerOptions returns the options with every default filled in.
func DefaultBreakerOptions() BreakerOptions {
	return BreakerOptions{Failures: 5, OpenFor: 2 * time.Second}
}

func (o BreakerOptions) validate() error {
	if o.OpenFor < 0 {
		return fmt.Errorf("controlplane: redis breaker open period must not be negative, got %v", o.OpenFor)
	}
	return nil
}

func (o BreakerOptions) withDefaults() BreakerOptions {
	def := DefaultBreakerOptions()
	if o.Failures == 0 {
		o.Failures = def.Failures
	}
	if o.OpenFor == 0 {
		o.OpenFor = def.OpenFor
	}
	return o
}

// errStoreTimeout is the cause of a call's context when the store's own
// timeout (RedisOptions.Timeout) ended it, which tells it apart from the
// caller's context ending.
var errStoreTimeout = errors.New("controlplane: redis call timed out")

// callerGone marks the error of a call whose caller's context ended first:
// the breaker counts it neither as a success nor as a failure.
type callerGone struct{ err error }

func (e callerGone) Error() string { return e.err.Error() }

// breaker is the circuit breaker of one RedisStore.
type breaker struct {
	cb *gobreaker.CircuitBreaker[struct{}]
}

func newBreaker(name string, o BreakerOptions) *breaker {
	o = o.withDefaults()
	return &breaker{cb: gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1, // one probe when half-open
		Timeout:     o.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= o.Failures },
		IsSuccessful: func(err error) bool {
			return err == nil || redisAnswered(err)
		},
		IsExcluded: func(err error) bool {
			var g callerGone
			return errors.As(err, &g)
		},
	})}
}

// redisAnswered reports whether err is a reply of a Redis server that can
// serve (an error reply about the command, or redis.Nil).
func redisAnswered(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	return !redis.IsLoadingError(err) && !redis.IsMasterDownError(err) && !redis.IsClusterDownError(err) &&
		!redis.IsTryAgainError(err) && !redis.IsMaxClientsError(err)
}

// do runs fn, a Redis call bounded by ctx (from RedisStore.call), through
// the breaker. It returns fn's error, or an error wrapping ErrUnavailable
// when the breaker refused to run fn.
func (b *breaker) do(ctx context.Context, fn func() error) error {
	_, err := b.cb.Execute(func() (struct{}, error) {
		err := fn()
		if err != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), errStoreTimeout) {
			return struct{}{}, callerGone{err}
		}
		return struct{}{}, err
	})
	var g callerGone
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case errors.As(err, &g):
		return g.err
	}
	return err
}

// closed reports whether the breaker is closed.
func (b *breaker) closed() bool { return b.cb.State() == gobreaker.StateClosed }

// Healthy reports whether the store's circuit breaker is closed: Redis
// answered the last calls (or too few failed in a row to open it). It does
// not contact Redis.
func (s *RedisStore) Healthy() bool { return s.br.closed() }

// Check pings Redis through the circuit breaker, for a health check: nil
// when Redis answers; an error wrapping ErrUnavailable, at once, while the
// breaker is open; the ping's error otherwise. When the breaker is
// half-open the ping is its probe, so a health check that polls Check
// closes the breaker once Redis is back even when nothing else calls it.
func (s *RedisStore) Check(ctx context.Context) error {
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	if err := s.br.do(ctx, func() error { return s.client.Ping(ctx).Err() }); err != nil {
		return fmt.Errorf("controlplane: ping redis: %w", err)
	}
	return nil
}
