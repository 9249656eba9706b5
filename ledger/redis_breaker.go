package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// BreakerOptions configures the circuit breaker (gobreaker) in front of a
// RedisStore's appends. The zero value takes the defaults of
// DefaultBreakerOptions.
//
// The breaker is closed while Redis answers: every append goes to Redis.
// After Failures Redis calls in a row have failed — Redis unreachable, the
// connection refused or cut, RedisOptions.Timeout elapsed, or a reply
// saying the server cannot serve (LOADING, MASTERDOWN, CLUSTERDOWN,
// TRYAGAIN, max clients) — it opens, and for OpenFor every append fails at
// once with an error wrapping ErrUnavailable, so that no call waits on a
// dead Redis (a Ledger with a Spool keeps such entries locally). Then it is
// half-open: one call goes through as a probe; its success closes the
// breaker, its failure opens it again for OpenFor. Other error replies mean
// Redis answered and count as successes.
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

// redisBreaker is the circuit breaker of one RedisStore.
type redisBreaker struct {
	cb *gobreaker.CircuitBreaker[struct{}]
}

func newRedisBreaker(o BreakerOptions) *redisBreaker {
	o = o.withDefaults()
	return &redisBreaker{cb: gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         "ledger-redis",
		MaxRequests:  1, // one probe when half-open
		Timeout:      o.OpenFor,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= o.Failures },
		IsSuccessful: func(err error) bool { return !unreachable(err) },
	})}
}

// unreachable reports whether err says Redis could not serve a call: not
// nil, not a reply of a server that can serve (an error reply about the
// command, redis.Nil), and not damage found in what it answered.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, ErrCorrupt) || errors.Is(err, redis.Nil) {
		return false
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return true // network, timeout, closed pool
	}
	return redis.IsLoadingError(err) || redis.IsMasterDownError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMaxClientsError(err)
}

// call runs fn, one Redis round trip, within the store's timeout and
// through the breaker. It returns fn's error, wrapped with ErrUnavailable
// when it says Redis could not serve; or, at once, an error wrapping
// ErrUnavailable when the breaker refused to run fn.
func (s *RedisStore) call(ctx context.Context, fn func(context.Context) error) error {
	_, err := s.br.cb.Execute(func() (struct{}, error) {
		cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
		defer cancel()
		return struct{}{}, fn(cctx)
	})
	switch {
	case err == nil:
		return nil
	case refused(err):
		return fmt.Errorf("%w: redis circuit open: %w", ErrUnavailable, err)
	case unreachable(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// refused reports whether err is the breaker refusing a call it did not run
// (open, or half-open with its probe under way): nothing reached Redis.
func refused(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// Healthy reports whether the store's circuit breaker is closed: Redis
// answered its last calls (or too few failed in a row to open it).
func (s *RedisStore) Healthy() bool { return s.br.cb.State() == gobreaker.StateClosed }

// refuseWhileOpen fails a read at once, with an error wrapping
// ErrUnavailable, unless the appends' breaker is closed: Redis failed its
// last calls, and a read would wait out the client's timeouts and retries.
// Only an append or Check probes a half-open breaker.
func (s *RedisStore) refuseWhileOpen() error {
	if s.br.cb.State() != gobreaker.StateClosed {
		return fmt.Errorf("%w: redis circuit open", ErrUnavailable)
	}
	return nil
}

// Check pings Redis through the breaker: nil when it answers; an error
// wrapping ErrUnavailable otherwise, at once while the breaker is open.
// When the breaker is half-open the ping is its probe, so a Ledger's
// replayer, which checks before replaying, closes it once Redis is back
// even when no call appends.
func (s *RedisStore) Check(ctx context.Context) error {
	return s.call(ctx, func(ctx context.Context) error { return s.client.Ping(ctx).Err() })
}
