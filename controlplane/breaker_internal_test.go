package controlplane

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// TestBreakerCounts: which call results count as failures.
func TestBreakerCounts(t *testing.T) {
	down := errors.New("dial tcp: connection refused")
	cases := []struct {
		name string
		err  error
		ctx  func(*testing.T) context.Context
		// opens is whether three such results in a row open a breaker
		// that opens after three failures.
		opens bool
	}{
		{"connection refused", down, nil, true},
		{"connection cut", io.EOF, nil, true},
		{"the store's timeout", context.DeadlineExceeded, storeTimedOut, true},
		{"LOADING", redisReply("LOADING Redis is loading the dataset in memory"), nil, true},
		{"MASTERDOWN", redisReply("MASTERDOWN Link with MASTER is down"), nil, true},
		{"success", nil, nil, false},
		{"redis.Nil", redis.Nil, nil, false},
		{"a script error (Redis answered)", redisReply("ERR Error running script"), nil, false},
		{"WRONGTYPE (Redis answered)", redisReply("WRONGTYPE Operation against a key holding the wrong kind of value"), nil, false},
		{"the caller cancelled", context.Canceled, callerCancelled, false},
		{"the caller's own deadline", context.DeadlineExceeded, callerTimedOut, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBreaker("test", BreakerOptions{Failures: 3, OpenFor: time.Hour})
			for range 3 {
				ctx := context.Background()
				if tc.ctx != nil {
					ctx = tc.ctx(t)
				}
				if err := b.do(ctx, func() error { return tc.err }); !errors.Is(err, tc.err) {
					t.Fatalf("do: got %v, want the call's error %v", err, tc.err)
				}
			}
			if got := !b.closed(); got != tc.opens {
				t.Errorf("after three: open %v, want %v", got, tc.opens)
			}
		})
	}
}

// redisReply is an error reply as go-redis returns it (a redis.Error).
func redisReply(msg string) error { return replyErr(msg) }

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// callContext returns the context of a store call (the store's timeout
// under the caller's context) as it is when the call returns.
func callContext(t *testing.T, caller context.Context, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeoutCause(caller, timeout, errStoreTimeout)
	t.Cleanup(cancel)
	if timeout < time.Second {
		<-ctx.Done()
	}
	return ctx
}

func storeTimedOut(t *testing.T) context.Context {
	return callContext(t, context.Background(), time.Nanosecond)
}

func callerCancelled(t *testing.T) context.Context {
	caller, cancel := context.WithCancel(context.Background())
	cancel()
	return callContext(t, caller, time.Hour)
}

func callerTimedOut(t *testing.T) context.Context {
	caller, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	t.Cleanup(cancel)
	<-caller.Done()
	return callContext(t, caller, time.Hour)
}

// TestBreakerOpensAndProbes: Failures failures in a row open it; open, it
// refuses at once with ErrUnavailable (wrapping gobreaker.ErrOpenState);
// after OpenFor one probe goes through, and its success closes it.
func TestBreakerOpensAndProbes(t *testing.T) {
	b := newBreaker("test", BreakerOptions{Failures: 2, OpenFor: 50 * time.Millisecond})
	fail := func() error { return io.EOF }
	ctx := context.Background()
	_ = b.do(ctx, fail)
	if !b.closed() {
		t.Fatal("open after one failure, want closed until two")
	}
	_ = b.do(ctx, func() error { return nil }) // a success resets the count
	_ = b.do(ctx, fail)
	if !b.closed() {
		t.Fatal("open after fail, succeed, fail; want closed (failures in a row)")
	}
	_ = b.do(ctx, fail)
	if b.closed() {
		t.Fatal("closed after two failures in a row, want open")
	}
	ran := false
	err := b.do(ctx, func() error { ran = true; return nil })
	if ran || !errors.Is(err, ErrUnavailable) || !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("open breaker: ran %v, err %v; want not run, ErrUnavailable wrapping ErrOpenState", ran, err)
	}
	time.Sleep(60 * time.Millisecond)
	// Half-open: while the probe runs, other calls are refused.
	probe := make(chan struct{})
	done := make(chan error)
	go func() { done <- b.do(ctx, func() error { <-probe; return nil }) }()
	time.Sleep(10 * time.Millisecond)
	if err := b.do(ctx, func() error { return nil }); !errors.Is(err, ErrUnavailable) || !errors.Is(err, gobreaker.ErrTooManyRequests) {
		t.Errorf("a second call while the probe runs: got %v, want ErrUnavailable (too many requests)", err)
	}
	close(probe)
	if err := <-done; err != nil {
		t.Fatalf("probe: %v", err)
	}
	if !b.closed() {
		t.Fatal("the probe succeeded but the breaker is not closed")
	}
}
