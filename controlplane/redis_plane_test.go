package controlplane_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/test/redistest"
)

// propagationWait bounds how long a test waits for a directive issued on
// one plane to bind on another.
const propagationWait = 5 * time.Second

// sidecar is one process of a fleet sharing Redis: its own client, engine
// (Fleet and Sink, holding the test fleet's contracts), store and running
// plane.
type sidecar struct {
	client redis.UniversalClient
	e      *governor.Engine
	p      *controlplane.Plane
}

// startSidecar starts a sidecar on srv under prefix; it stops when t ends.
func startSidecar(t testing.TB, srv *redistest.Server, prefix string) *sidecar {
	t.Helper()
	e, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	for _, c := range fleet {
		if err := e.SetContract(c); err != nil {
			t.Fatalf("SetContract(%s): %v", c.AgentID, err)
		}
	}
	client := redisClient(t, srv)
	store := openRedisStore(t, client, prefix)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	p, err := controlplane.New(controlplane.DefaultConfig(), e, e, store, controlplane.WithLogger(log))
	if err != nil {
		t.Fatalf("controlplane.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &sidecar{client: client, e: e, p: p}
}

func (s *sidecar) issue(t testing.TB, req controlplane.IssueRequest) controlplane.Directive {
	t.Helper()
	if req.Operator == "" {
		req.Operator = "alice"
	}
	d, err := s.p.Issue(context.Background(), req)
	if err != nil {
		t.Fatalf("Issue(%s %+v): %v", req.Type, req.Target, err)
	}
	return d
}

// decide evaluates an action of agent without changing its state.
func (s *sidecar) decide(t testing.TB, agent string, act governor.Action) *governor.Decision {
	t.Helper()
	d, err := s.e.Evaluate(governor.Request{AgentID: agent, Action: act, DryRun: true})
	if err != nil {
		t.Fatalf("Evaluate(%s): %v", agent, err)
	}
	return d
}

func (s *sidecar) quarantined(t testing.TB, agent string) bool {
	t.Helper()
	return quarantined(s.decide(t, agent, readAct()))
}

// waitUntil polls cond every millisecond until it holds, failing t after
// propagationWait; it returns how long that took.
func waitUntil(t testing.TB, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > propagationWait {
			t.Fatalf("%s: not within %v", what, propagationWait)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

func TestRedisPlanesShareDirectives(t *testing.T) {
	srv := redistest.Start(t)
	a, b := startSidecar(t, srv, "fleet"), startSidecar(t, srv, "fleet")

	var q controlplane.Directive
	t.Run("a quarantine issued on A binds on B", func(t *testing.T) {
		q = a.issue(t, quarantine("a1"))
		took := waitUntil(t, "B escalates a1", func() bool { return b.quarantined(t, "a1") })
		t.Logf("bound on B after %v", took)
		if got, err := b.p.Get(context.Background(), q.ID); err != nil || got.Status != controlplane.StatusActive {
			t.Errorf("B.Get(%s): got %+v, %v", q.ID, got, err)
		}
		if b.quarantined(t, "a2") {
			t.Error("B escalates a2, which the quarantine does not target")
		}
	})
	t.Run("expiring it on A releases it on B", func(t *testing.T) {
		if _, err := a.p.Expire(context.Background(), q.ID, "bob"); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "B allows a1", func() bool { return b.decide(t, "a1", readAct()).Verdict == governor.Allow })
		if list, _ := b.p.List(context.Background()); len(list) != 0 {
			t.Errorf("B lists %d active directives, want 0", len(list))
		}
	})
	t.Run("a release on B of a quarantine issued on A", func(t *testing.T) {
		q2 := a.issue(t, quarantine("a2", "a3"))
		waitUntil(t, "B escalates a3", func() bool { return b.quarantined(t, "a3") })
		b.issue(t, release("a3"))
		waitUntil(t, "A allows a3", func() bool { return !a.quarantined(t, "a3") })
		if !a.quarantined(t, "a2") {
			t.Error("A no longer escalates a2, which the release did not target")
		}
		if got, _ := a.p.Get(context.Background(), q2.ID); !slices.Equal(got.Released, []string{"a3"}) {
			t.Errorf("A sees the quarantine released from %v, want [a3]", got.Released)
		}
	})
	t.Run("an enforce directive is compiled once on B", func(t *testing.T) {
		a.issue(t, controlplane.IssueRequest{Type: "enforce", Target: controlplane.Target{AgentIDs: []string{"a4"}},
			Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: "no_prod", Expr: `!action.target.startsWith("prod/")`}}}})
		prod := governor.Action{Type: "read", Target: "prod/db"}
		waitUntil(t, "B denies a4 in prod", func() bool {
			d := b.decide(t, "a4", prod)
			return d.Verdict == governor.Deny && slices.Contains(d.Vetoes, "invariant:no_prod")
		})
		compiled := b.e.Overlay("a4").Invariants[0]
		// Another change makes B reload; the invariant is not compiled again.
		a.issue(t, quarantine("a1"))
		waitUntil(t, "B escalates a1", func() bool { return b.quarantined(t, "a1") })
		if got := b.e.Overlay("a4").Invariants[0]; got != compiled {
			t.Error("B compiled the enforce directive's invariant again on reload")
		}
	})
}

// TestRedisPlaneOutage takes Redis down under two sidecars: B keeps
// enforcing the last overlay it has, and once Redis is back it re-reads
// (the subscription is made again), so a change whose signal it missed
// binds, and so do directives issued afterwards.
func TestRedisPlaneOutage(t *testing.T) {
	srv := redistest.Start(t)
	a, b := startSidecar(t, srv, "fleet"), startSidecar(t, srv, "fleet")
	ctx := context.Background()
	a.issue(t, quarantine("a1"))
	waitUntil(t, "B escalates a1", func() bool { return b.quarantined(t, "a1") })

	// A directive written without its signal, as if B had been
	// disconnected when it was published.
	lost := controlplane.Directive{ID: "dir_00000000000000aa", Type: controlplane.Quarantine, Operator: "alice",
		Target: controlplane.Target{AgentIDs: []string{"a3"}}, Status: controlplane.StatusActive,
		IssuedAt: time.Now().UTC(), ResolvedAgents: []string{"a3"}}
	raw, _ := json.Marshal(lost)
	if err := a.client.HSet(ctx, "{fleet}:directives", lost.ID, raw).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if b.quarantined(t, "a3") {
		t.Fatal("B escalates a3 already, without a signal")
	}

	srv.Stop()
	t.Run("B keeps enforcing while Redis is down", func(t *testing.T) {
		if err := b.p.Reload(ctx); err == nil {
			t.Error("Reload with Redis down: got no error")
		}
		if _, err := a.p.Issue(ctx, controlplane.IssueRequest{Type: "quarantine", Operator: "alice", Target: controlplane.Target{AgentIDs: []string{"a2"}}}); err == nil {
			t.Error("Issue on A with Redis down: got no error")
		}
		for range 5 {
			if !b.quarantined(t, "a1") {
				t.Fatal("B stopped escalating a1 while Redis is down")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if b.quarantined(t, "a2") {
			t.Error("B escalates a2, whose quarantine could not be saved")
		}
	})

	srv.Restart()
	t.Run("B re-reads when Redis is back", func(t *testing.T) {
		took := waitUntil(t, "B escalates a3 (missed signal)", func() bool { return b.quarantined(t, "a3") })
		t.Logf("B re-read %v after Redis came back", took)
		if !b.quarantined(t, "a1") {
			t.Error("B no longer escalates a1")
		}
	})
	t.Run("a directive issued on A after the outage binds on B", func(t *testing.T) {
		var err error
		waitUntil(t, "A can issue again", func() bool {
			req := quarantine("a2")
			req.Operator = "alice"
			_, err = a.p.Issue(ctx, req)
			if err != nil {
				t.Logf("Issue on A: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
			return err == nil
		})
		waitUntil(t, "B escalates a2", func() bool { return b.quarantined(t, "a2") })
	})
}

// BenchmarkDirectivePropagation issues 200 directives (per iteration) on
// one plane and measures, for each, the time from the start of Issue until
// the other plane's engine has it in the agent's overlay; it reports the
// percentiles in milliseconds. The goal is p99 <= 100 ms.
func BenchmarkDirectivePropagation(b *testing.B) {
	srv := redistest.Start(b)
	src, dst := startSidecar(b, srv, "bench"), startSidecar(b, srv, "bench")
	bound := func(id string) bool {
		ov := dst.e.Overlay("a1")
		return ov != nil && slices.Contains(ov.Directives, id)
	}
	wait := func(id string, start time.Time) time.Duration {
		for !bound(id) {
			if time.Since(start) > propagationWait {
				b.Fatalf("directive %s not bound on the other plane within %v", id, propagationWait)
			}
			time.Sleep(20 * time.Microsecond)
		}
		return time.Since(start)
	}
	warm := src.issue(b, quarantine("a1")) // the subscriptions are up
	wait(warm.ID, time.Now())

	var lat []time.Duration
	for b.Loop() {
		for range 200 {
			start := time.Now()
			d := src.issue(b, quarantine("a1"))
			lat = append(lat, wait(d.ID, start))
		}
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(lat))+0.5), len(lat)-1)
		return float64(lat[max(i-1, 0)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/float64(time.Millisecond), "max-ms")
}
