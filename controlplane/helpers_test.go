package controlplane_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// The engine satisfies what the plane needs of it.
var (
	_ controlplane.Fleet = (*governor.Engine)(nil)
	_ controlplane.Sink  = (*governor.Engine)(nil)
	_ controlplane.Store = (*controlplane.FileStore)(nil)
	_ controlplane.Store = (*controlplane.MemoryStore)(nil)
)

// t0 is a Wednesday at noon UTC.
var t0 = time.Date(2025, time.January, 15, 12, 0, 0, 0, time.UTC)

// fakeClock is a clock tests set and advance; the engine and the plane share
// it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fleet is the test fleet: archetypes and teams chosen so that every
// intersection of criteria selects a different set.
var fleet = []governor.Contract{
	{AgentID: "a1", Archetype: "financial-analyst", Team: "payments", Scope: []string{"*"}},
	{AgentID: "a2", Archetype: "financial-analyst", Team: "risk", Scope: []string{"*"}},
	{AgentID: "a3", Archetype: "customer-experience", Team: "payments", Scope: []string{"*"}},
	{AgentID: "a4", Team: "payments", Scope: []string{"*"}, HumanOverride: []string{"transfer"}},
}

type fixture struct {
	e     *governor.Engine
	clk   *fakeClock
	store controlplane.Store
	p     *controlplane.Plane
}

// newFixture returns an engine holding the test fleet and an enabled plane
// over a MemoryStore, sharing one fake clock.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{clk: &fakeClock{t: t0}, store: controlplane.NewMemoryStore()}
	f.e = newEngine(t, f.clk)
	f.p = newPlane(t, controlplane.DefaultConfig(), f.e, f.store, f.clk)
	return f
}

func newEngine(t testing.TB, clk *fakeClock) *governor.Engine {
	t.Helper()
	e, err := governor.New(governor.DefaultConfig(), governor.WithClock(clk.Now))
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	for _, c := range fleet {
		if err := e.SetContract(c); err != nil {
			t.Fatalf("SetContract(%s): %v", c.AgentID, err)
		}
	}
	return e
}

func newPlane(t testing.TB, cfg controlplane.Config, e *governor.Engine, store controlplane.Store, clk *fakeClock) *controlplane.Plane {
	t.Helper()
	p, err := controlplane.New(cfg, e, e, store, controlplane.WithClock(clk.Now))
	if err != nil {
		t.Fatalf("controlplane.New: %v", err)
	}
	return p
}

func (f *fixture) issue(t testing.TB, req controlplane.IssueRequest) controlplane.Directive {
	t.Helper()
	if req.Operator == "" {
		req.Operator = "alice"
	}
	d, err := f.p.Issue(context.Background(), req)
	if err != nil {
		t.Fatalf("Issue(%s %+v): %v", req.Type, req.Target, err)
	}
	f.clk.Advance(time.Second) // issue times differ, so "newest" is defined
	return d
}

func (f *fixture) expire(t testing.TB, id string) controlplane.Directive {
	t.Helper()
	d, err := f.p.Expire(context.Background(), id, "bob")
	if err != nil {
		t.Fatalf("Expire(%s): %v", id, err)
	}
	return d
}

func (f *fixture) get(t testing.TB, id string) controlplane.Directive {
	t.Helper()
	d, err := f.p.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return d
}

func (f *fixture) eval(t testing.TB, agent string, act governor.Action) *governor.Decision {
	t.Helper()
	d, err := f.e.Evaluate(governor.Request{AgentID: agent, Action: act})
	if err != nil {
		t.Fatalf("Evaluate(%s): %v", agent, err)
	}
	f.clk.Advance(time.Second)
	return d
}

// dryEval evaluates without changing the agent's state (its drift stays
// what the test set up).
func (f *fixture) dryEval(t testing.TB, agent string, act governor.Action) *governor.Decision {
	t.Helper()
	d, err := f.e.Evaluate(governor.Request{AgentID: agent, Action: act, DryRun: true})
	if err != nil {
		t.Fatalf("Evaluate(%s): %v", agent, err)
	}
	return d
}

func (f *fixture) status(t testing.TB, agent string) governor.AgentStatus {
	t.Helper()
	s, err := f.e.Status(agent)
	if err != nil {
		t.Fatalf("Status(%s): %v", agent, err)
	}
	return s
}

func (f *fixture) events(t testing.TB, filter controlplane.EventFilter) []controlplane.Event {
	t.Helper()
	evs, err := f.p.Events(context.Background(), filter)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	return evs
}

func readAct() governor.Action { return governor.Action{Type: "read", Target: "docs/readme"} }

func steps(d *governor.Decision) []string {
	var out []string
	for _, s := range d.Pipeline {
		out = append(out, s.Name)
	}
	return out
}

// quarantined reports whether the decision is the quarantine pre-check's
// ESCALATE, decided alone.
func quarantined(d *governor.Decision) bool {
	return d.Verdict == governor.Escalate && slices.Equal(steps(d), []string{governor.StepQuarantine})
}

// wantEvaluates checks that an in-scope read of the agent is quarantined or
// allowed by tier 2 as expected.
func (f *fixture) wantQuarantined(t testing.TB, agent string, want bool) {
	t.Helper()
	d := f.eval(t, agent, readAct())
	if got := quarantined(d); got != want {
		t.Errorf("agent %s: got %s by %v (quarantined %v), want quarantined %v", agent, d.Verdict, steps(d), got, want)
	}
	if !want && d.Verdict != governor.Allow {
		t.Errorf("agent %s: got %s by %v, want ALLOW", agent, d.Verdict, steps(d))
	}
}

func fieldError(t testing.TB, err error) *controlplane.FieldError {
	t.Helper()
	var fe *controlplane.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("got error %v (%T), want a *controlplane.FieldError", err, err)
	}
	return fe
}

func quarantine(agents ...string) controlplane.IssueRequest {
	return controlplane.IssueRequest{Type: "quarantine", Reason: "review", Target: controlplane.Target{AgentIDs: agents}}
}

func release(agents ...string) controlplane.IssueRequest {
	return controlplane.IssueRequest{Type: "release", Reason: "reviewed", Target: controlplane.Target{AgentIDs: agents}}
}

func tighten(factor float64, agents ...string) controlplane.IssueRequest {
	return controlplane.IssueRequest{Type: "tighten", Target: controlplane.Target{AgentIDs: agents},
		Parameters: controlplane.Parameters{Factor: factor}}
}
