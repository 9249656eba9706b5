package controlplane_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/controlplane/controlplanetest"
	"github.com/vigilhq/vigil/test/redistest"
)

// TestRedisBreaker: with Redis stopped, the first Failures calls fail on
// their own; then the breaker opens and every call fails at once with
// ErrUnavailable, without waiting on Redis. With Redis back, the first call
// after the open period is the probe that closes it again.
func TestRedisBreaker(t *testing.T) {
	srv := redistest.Start(t)
	client := redisClient(t, srv)
	const failures, openFor = 5, 500 * time.Millisecond
	s, err := controlplane.NewRedisStore(client, controlplane.RedisOptions{Prefix: "breaker",
		Timeout: 300 * time.Millisecond, Breaker: controlplane.BreakerOptions{Failures: failures, OpenFor: openFor}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	if err := s.SaveDirective(ctx, controlplanetest.Directive(1)); err != nil {
		t.Fatalf("SaveDirective: %v", err)
	}
	if !s.Healthy() || s.Check(ctx) != nil {
		t.Fatalf("Redis up: Healthy %v, Check %v; want healthy", s.Healthy(), s.Check(ctx))
	}

	srv.Stop()
	// Each kind of call counts: directives, events, snapshots.
	calls := []func() error{
		func() error { _, err := s.LoadDirectives(ctx); return err },
		func() error { return s.SaveSnapshot(ctx, "a1", []byte(`{}`)) },
		func() error { _, err := s.Events(ctx, controlplane.EventFilter{Limit: 1}); return err },
		func() error { return s.AppendEvent(ctx, controlplanetest.Event(1, "X", "a", "t")) },
		func() error { _, err := s.LoadSnapshots(ctx); return err },
	}
	for i, call := range calls {
		err := call()
		if err == nil || errors.Is(err, controlplane.ErrUnavailable) {
			t.Fatalf("call %d with Redis down: got %v, want the call's own failure", i+1, err)
		}
		if wantHealthy := i+1 < failures; s.Healthy() != wantHealthy {
			t.Fatalf("after %d failed calls: Healthy %v, want %v", i+1, s.Healthy(), wantHealthy)
		}
	}

	// Open: calls fail fast.
	var durations []time.Duration
	for range 100 {
		start := time.Now()
		_, err := s.LoadDirectives(ctx)
		durations = append(durations, time.Since(start))
		if !errors.Is(err, controlplane.ErrUnavailable) {
			t.Fatalf("call with the breaker open: got %v, want ErrUnavailable", err)
		}
	}
	slices.Sort(durations)
	t.Logf("fail-fast with the breaker open: median %v, max %v (100 calls)", durations[50], durations[99])
	if durations[99] >= 10*time.Millisecond {
		t.Errorf("slowest call with the breaker open took %v, want < 10ms", durations[99])
	}
	if err := s.Check(ctx); !errors.Is(err, controlplane.ErrUnavailable) {
		t.Errorf("Check with the breaker open: got %v, want ErrUnavailable", err)
	}

	// Still down after the open period: the probe fails and reopens it.
	time.Sleep(openFor + 50*time.Millisecond)
	if err := s.Check(ctx); err == nil || errors.Is(err, controlplane.ErrUnavailable) {
		t.Fatalf("probe with Redis still down: got %v, want the ping's failure", err)
	}
	if _, err := s.LoadDirectives(ctx); !errors.Is(err, controlplane.ErrUnavailable) {
		t.Fatalf("call after a failed probe: got %v, want ErrUnavailable (open again)", err)
	}

	srv.Restart()
	if _, err := s.LoadDirectives(ctx); !errors.Is(err, controlplane.ErrUnavailable) {
		t.Fatalf("call with Redis back but within the open period: got %v, want ErrUnavailable", err)
	}
	time.Sleep(openFor + 50*time.Millisecond)
	if s.Healthy() {
		t.Fatal("Healthy before any probe, want false (half-open)")
	}
	ds, err := s.LoadDirectives(ctx) // the probe
	if err != nil || len(ds) != 1 {
		t.Fatalf("probe with Redis back: got %d directives, %v; want 1", len(ds), err)
	}
	if !s.Healthy() || s.Check(ctx) != nil {
		t.Fatalf("after a successful probe: Healthy %v, Check %v; want healthy", s.Healthy(), s.Check(ctx))
	}
}

// TestRedisBreakerIgnoresCallerDeadlines: a call that fails because its
// caller's deadline came first says nothing about Redis and does not count;
// one that the store's own timeout ends does.
func TestRedisBreakerIgnoresCallerDeadlines(t *testing.T) {
	srv := redistest.Start(t)
	client := redisClient(t, srv)
	s, err := controlplane.NewRedisStore(client, controlplane.RedisOptions{Prefix: "deadlines",
		Timeout: 200 * time.Millisecond, Breaker: controlplane.BreakerOptions{Failures: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// Redis stops answering commands for a while (and answers again
	// afterwards), so that calls time out.
	if err := srv.Client(t).Do(context.Background(), "CLIENT", "PAUSE", "3000", "ALL").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	for range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := s.LoadDirectives(ctx)
		cancel()
		if err == nil {
			t.Fatal("LoadDirectives while Redis is paused: got nil, want a timeout")
		}
	}
	if !s.Healthy() {
		t.Fatal("breaker opened by the callers' own deadlines, want closed")
	}
	for range 2 {
		if _, err := s.LoadDirectives(context.Background()); err == nil {
			t.Fatal("LoadDirectives while Redis is paused: got nil, want a timeout")
		}
	}
	if s.Healthy() {
		t.Error("two calls ended by the store's timeout: breaker closed, want open")
	}
}

// TestRedisOptionsBreakerValidate: a negative open period is refused.
func TestRedisOptionsBreakerValidate(t *testing.T) {
	o := controlplane.RedisOptions{Breaker: controlplane.BreakerOptions{OpenFor: -time.Second}}
	if err := o.Validate(); err == nil {
		t.Error("negative breaker open period: got nil, want an error")
	}
	if got := controlplane.DefaultRedisOptions().Breaker; got != (controlplane.BreakerOptions{Failures: 5, OpenFor: 2 * time.Second}) {
		t.Errorf("default breaker options: got %+v, want 5 failures, 2s", got)
	}
}
