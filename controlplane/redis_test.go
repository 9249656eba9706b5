package controlplane_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/controlplane/controlplanetest"
	"github.com/vigilhq/vigil/test/redistest"
)

// redisClient returns a client of srv as cmd/vigil builds it (context
// timeouts honoured), closed when t ends.
func redisClient(t testing.TB, srv *redistest.Server) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// openRedisStore returns a store on client under prefix, closed when t
// ends.
func openRedisStore(t testing.TB, client redis.UniversalClient, prefix string) *controlplane.RedisStore {
	t.Helper()
	s, err := controlplane.NewRedisStore(client, controlplane.RedisOptions{Prefix: prefix})
	if err != nil {
		t.Fatalf("NewRedisStore: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRedisStoreConformance(t *testing.T) {
	open, reopen := redisFactory[controlplane.Store](t, "conformance")
	controlplanetest.Run(t, open, reopen)
}

func TestRedisStoreKeyLayout(t *testing.T) {
	srv := redistest.Start(t)
	client := redisClient(t, srv)
	s := openRedisStore(t, client, "")
	ctx := context.Background()
	sub := client.Subscribe(ctx, "{vigil:cp}:changed")
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, 5*time.Second); err != nil { // the subscription
		t.Fatalf("subscribe: %v", err)
	}

	d := controlplanetest.Directive(1)
	if err := s.SaveDirective(ctx, d); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(d)
	if got, err := client.HGet(ctx, "{vigil:cp}:directives", d.ID).Result(); err != nil || got != string(want) {
		t.Errorf("HGET {vigil:cp}:directives %s: got %q, %v; want %s", d.ID, got, err, want)
	}
	msg, err := sub.ReceiveTimeout(ctx, 5*time.Second)
	if m, ok := msg.(*redis.Message); err != nil || !ok || m.Payload != d.ID {
		t.Errorf("changed signal: got %#v, %v; want a message carrying %s", msg, err, d.ID)
	}
	if got := s.Channel(); got != "{vigil:cp}:changed" {
		t.Errorf("Channel: got %q", got)
	}

	e := controlplanetest.Event(1, controlplane.CodeDirectiveIssued, "alice", d.ID)
	if err := s.AppendEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	msgs, err := client.XRange(ctx, "{vigil:cp}:events", "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("XRANGE {vigil:cp}:events: got %d entries, %v; want 1", len(msgs), err)
	}
	v := msgs[0].Values
	if v["c"] != e.ContextCode || v["a"] != e.Actor || v["t"] != e.Target || v["e"] == nil {
		t.Errorf("stream entry: got %v", v)
	}
	keys, _ := client.Keys(ctx, "*").Result()
	if len(keys) != 2 {
		t.Errorf("got keys %v, want the directives hash and the events stream", keys)
	}
}

func TestRedisStoreTrimsEvents(t *testing.T) {
	srv := redistest.Start(t)
	client := redisClient(t, srv)
	s, err := controlplane.NewRedisStore(client, controlplane.RedisOptions{Prefix: "trim", MaxEvents: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 1000
	for i := range n {
		if err := s.AppendEvent(ctx, controlplanetest.Event(i, controlplane.CodeDirectiveIssued, "alice", "x")); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.Events(ctx, controlplane.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// MAXLEN ~ trims whole stream nodes (100 entries by default).
	if len(evs) < 10 || len(evs) > 200 {
		t.Errorf("got %d events after %d appends with MaxEvents 10, want about 10", len(evs), n)
	}
	if evs[0].ID != controlplanetest.Event(n-1, "", "", "").ID {
		t.Errorf("newest event: got %s", evs[0].ID)
	}
}

func TestRedisStoreEventsPaging(t *testing.T) {
	srv := redistest.Start(t)
	s := openRedisStore(t, redisClient(t, srv), "paging")
	ctx := context.Background()
	const n = 1000 // several pages
	for i := range n {
		actor := "bob"
		if i%100 == 7 {
			actor = "alice"
		}
		if err := s.AppendEvent(ctx, controlplanetest.Event(i, controlplane.CodeDirectiveIssued, actor, "x")); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Events(ctx, controlplane.EventFilter{})
	if err != nil || len(all) != n {
		t.Fatalf("Events: got %d, %v; want %d", len(all), err, n)
	}
	for i, e := range all {
		if want := controlplanetest.Event(n-1-i, "", "", "").ID; e.ID != want {
			t.Fatalf("event %d: got %s, want %s", i, e.ID, want)
		}
	}
	alice, err := s.Events(ctx, controlplane.EventFilter{Actor: "alice", Limit: 3})
	if err != nil || len(alice) != 3 || alice[0].ID != controlplanetest.Event(907, "", "", "").ID || alice[2].ID != controlplanetest.Event(707, "", "", "").ID {
		t.Errorf("alice's newest 3: got %v, %v", alice, err)
	}
	if got, _ := s.Events(ctx, controlplane.EventFilter{Limit: 5}); len(got) != 5 {
		t.Errorf("limit 5: got %d", len(got))
	}
}

func TestRedisStoreOptions(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never contacted
	defer client.Close()
	for _, o := range []controlplane.RedisOptions{
		{Prefix: "a{b"}, {Prefix: "a}"}, {MaxEvents: -1}, {Timeout: -time.Second}, {HealthCheck: -1},
	} {
		if _, err := controlplane.NewRedisStore(client, o); err == nil {
			t.Errorf("NewRedisStore(%+v): got no error", o)
		}
	}
	if _, err := controlplane.NewRedisStore(nil, controlplane.RedisOptions{}); err == nil {
		t.Error("NewRedisStore(nil): got no error")
	}
}

func TestRedisStoreClosed(t *testing.T) {
	srv := redistest.Start(t)
	client := redisClient(t, srv)
	s := openRedisStore(t, client, "closed")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	ctx := context.Background()
	checks := map[string]error{
		"SaveDirective":  s.SaveDirective(ctx, controlplanetest.Directive(1)),
		"AppendEvent":    s.AppendEvent(ctx, controlplanetest.Event(1, "", "", "")),
		"LoadDirectives": func() error { _, err := s.LoadDirectives(ctx); return err }(),
		"Events":         func() error { _, err := s.Events(ctx, controlplane.EventFilter{}); return err }(),
		"Watch":          s.Watch(ctx, func() {}),
	}
	for name, err := range checks {
		if !errors.Is(err, controlplane.ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", name, err)
		}
	}
	if err := client.Ping(ctx).Err(); err != nil {
		t.Errorf("the client after the store's Close: %v (Close must not close it)", err)
	}
}

func TestRedisStoreUnreachableFailsFast(t *testing.T) {
	srv := redistest.Start(t)
	s := openRedisStore(t, redisClient(t, srv), "down")
	srv.Stop()
	start := time.Now()
	if _, err := s.LoadDirectives(context.Background()); err == nil {
		t.Fatal("LoadDirectives with Redis down: got no error")
	}
	if err := s.SaveDirective(context.Background(), controlplanetest.Directive(1)); err == nil {
		t.Fatal("SaveDirective with Redis down: got no error")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("two calls with Redis down took %v, want them to fail fast", took)
	}
}

// TestRedisStoreWatch checks that Watch signals every saved directive and
// every (re)subscription, and stops with its context and with Close.
func TestRedisStoreWatch(t *testing.T) {
	srv := redistest.Start(t)
	s := openRedisStore(t, redisClient(t, srv), "watch")
	signals := make(chan struct{}, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, func() { signals <- struct{}{} }) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-signals:
		case <-time.After(5 * time.Second):
			t.Fatalf("no signal %s within 5s", what)
		}
	}
	wait("for the subscription")
	if err := s.SaveDirective(context.Background(), controlplanetest.Directive(1)); err != nil {
		t.Fatal(err)
	}
	wait("for a saved directive")
	srv.Restart() // stop, then start again
	wait("for the subscription after Redis restarted")
	if err := s.SaveDirective(context.Background(), controlplanetest.Directive(2)); err != nil {
		t.Fatal(err)
	}
	wait("for a directive saved after the restart")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Watch after its context ended: got %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return when its context ended")
	}

	go func() { done <- s.Watch(context.Background(), func() {}) }()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, controlplane.ErrClosed) {
			t.Errorf("Watch after Close: got %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return when the store closed")
	}
}
