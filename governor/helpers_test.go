package governor

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a controllable clock: tests set and advance its time.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// t0 is a Wednesday at noon UTC (outside daylight saving time everywhere
// that matters here).
var t0 = time.Date(2025, time.January, 15, 12, 0, 0, 0, time.UTC)

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

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

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// newTestEngine returns an engine with cfg and a fake clock at t0.
func newTestEngineCfg(t testing.TB, cfg Config, opts ...Option) (*Engine, *fakeClock) {
	t.Helper()
	clk := newFakeClock(t0)
	e, err := New(cfg, append([]Option{WithClock(clk.Now)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e, clk
}

func newTestEngine(t testing.TB, opts ...Option) (*Engine, *fakeClock) {
	t.Helper()
	return newTestEngineCfg(t, DefaultConfig(), opts...)
}

func mustContract(t testing.TB, e *Engine, c Contract) {
	t.Helper()
	if err := e.SetContract(c); err != nil {
		t.Fatalf("SetContract(%s): %v", c.AgentID, err)
	}
}

// engineWith returns an engine holding one agent with contract c.
func engineWith(t testing.TB, c Contract, opts ...Option) (*Engine, *fakeClock) {
	t.Helper()
	e, clk := newTestEngine(t, opts...)
	mustContract(t, e, c)
	return e, clk
}

func evalReq(t testing.TB, e *Engine, req Request) *Decision {
	t.Helper()
	d, err := e.Evaluate(req)
	if err != nil {
		t.Fatalf("Evaluate(%s, %s): %v", req.AgentID, req.Action.Type, err)
	}
	checkPipeline(t, d)
	return d
}

func evalAct(t testing.TB, e *Engine, agentID string, act Action) *Decision {
	t.Helper()
	return evalReq(t, e, Request{AgentID: agentID, Action: act})
}

func dryAct(t testing.TB, e *Engine, agentID string, act Action) *Decision {
	t.Helper()
	return evalReq(t, e, Request{AgentID: agentID, Action: act, DryRun: true})
}

func readAct() Action { return Action{Type: "read", Target: "docs/readme"} }
func writeAct() Action {
	return Action{Type: "write", Target: "docs/readme", Parameters: map[string]any{"text": "x"}}
}

// scoreOf returns the named dimension's score of d.
func scoreOf(t testing.TB, d *Decision, dim string) DimensionScore {
	t.Helper()
	for _, s := range d.Scores {
		if s.Dimension == dim {
			return s
		}
	}
	t.Fatalf("no score for %s in decision (verdict %s, steps %v)", dim, d.Verdict, stepNames(d))
	return DimensionScore{}
}

func stepNames(d *Decision) []string {
	out := make([]string, len(d.Pipeline))
	for i, s := range d.Pipeline {
		out[i] = s.Name
	}
	return out
}

func findStep(d *Decision, name string) (Step, bool) {
	for _, s := range d.Pipeline {
		if s.Name == name {
			return s, true
		}
	}
	return Step{}, false
}

// fullPipeline is the documented order of steps 1 to 11.
var fullPipeline = []string{
	StepTrustDecay, StepContextualModifier, StepReversibility, StepDimensionEval, StepCrossDimensional,
	StepTier1, StepUCSCompute, StepUCSAdjustment, StepReversibilityEscalation, StepTier2, StepTier3,
}

// checkPipeline asserts the pipeline invariants every decision must keep:
// exactly one step decided and it is the last; the steps are the documented
// ones in the documented order (a pre-check alone, or a prefix of steps 1-11,
// with tier2 absent exactly when the action was forced to tier 3).
func checkPipeline(t testing.TB, d *Decision) {
	t.Helper()
	names := stepNames(d)
	if len(names) == 0 {
		t.Fatalf("empty pipeline")
	}
	decided := 0
	for _, s := range d.Pipeline {
		if s.Decided {
			decided++
		}
	}
	if decided != 1 || !d.Pipeline[len(d.Pipeline)-1].Decided {
		t.Fatalf("pipeline %v: got %d deciding steps (last decided %v), want exactly 1 and last", names, decided, d.Pipeline[len(d.Pipeline)-1].Decided)
	}
	if d.Verdict < Allow || d.Verdict > Suspend {
		t.Fatalf("got verdict %v, want a valid verdict", d.Verdict)
	}
	if names[0] == StepQuarantine || names[0] == StepSuspension {
		if len(names) != 1 {
			t.Fatalf("pre-check pipeline %v: got %d steps, want 1", names, len(names))
		}
		return
	}
	want := fullPipeline
	if d.Reversibility.ForcedTier3 {
		want = slices.DeleteFunc(slices.Clone(fullPipeline), func(s string) bool { return s == StepTier2 })
	}
	if len(names) > len(want) || !slices.Equal(names, want[:len(names)]) {
		t.Fatalf("got pipeline %v, want a prefix of %v", names, want)
	}
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func approxTol(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func mustStatus(t testing.TB, e *Engine, id string) AgentStatus {
	t.Helper()
	s, err := e.Status(id)
	if err != nil {
		t.Fatalf("Status(%s): %v", id, err)
	}
	return s
}

func mustTrustEvents(t testing.TB, e *Engine, id string) []TrustEvent {
	t.Helper()
	ev, err := e.TrustEvents(id)
	if err != nil {
		t.Fatalf("TrustEvents(%s): %v", id, err)
	}
	return ev
}

func mustDriftHistory(t testing.TB, e *Engine, id string) []DriftPoint {
	t.Helper()
	h, err := e.DriftHistory(id)
	if err != nil {
		t.Fatalf("DriftHistory(%s): %v", id, err)
	}
	return h
}

// withState runs f on the agent's state under its lock (internal tests
// that set up a precise state).
func withState(t testing.TB, e *Engine, id string, f func(st *agentState)) {
	t.Helper()
	a := e.agent(id)
	if a == nil {
		t.Fatalf("no agent %s", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.st)
}

func fieldErr(t testing.TB, err error) *FieldError {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("got error %v (%T), want a *FieldError", err, err)
	}
	return fe
}

// scoreVector builds a full Scores slice from dimension names; dimensions
// absent from m are left without a name (a missing score).
func scoreVector(m map[string]float64) []DimensionScore {
	out := make([]DimensionScore, numDims)
	for i, spec := range dimensionOrder {
		if v, ok := m[spec.name]; ok {
			out[i] = DimensionScore{Dimension: spec.name, Score: v, Weight: spec.weight, Confidence: 1}
		}
	}
	return out
}
