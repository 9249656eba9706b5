package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// The keys of the trajectory answers (API.md section 10).
var (
	trajectoryKeys = []string{"agent_id", "current", "markers", "observed", "optimizer_enabled", "policy", "projected",
		"recommendation", "risk_level", "thresholds", "velocity"}
	scoreKeys       = []string{"action", "outcome", "overall", "semantic", "target", "temporal"}
	pointKeys       = []string{"action", "outcome", "overall", "semantic", "step", "target", "temporal"}
	policyKeys      = []string{"comparison", "conditions", "confidence", "decision_tree", "expected_cost", "schedule", "strategy"}
	historyKeys     = []string{"agent_id", "drift", "interventions", "projections"}
	driftRecordKeys = []string{"action", "confidence", "outcome", "overall", "semantic", "step", "target", "temporal", "timestamp"}
	fleetKeys       = []string{"agents", "optimizer_enabled", "policy_states", "summary"}
	fleetAgentKeys  = []string{"agent_id", "expected_cost", "policy_state", "risk_level", "strategy"}
	simulationKeys  = []string{"agent_id", "curve", "current_drift", "current_velocity", "estimated_total_cost", "horizon",
		"markers", "optimizer_enabled", "strategy"}
)

// driftConfig recomputes drift every 5 observations over a 20-observation
// window (defaults: every 10 over 100), so that a few dozen actions drift.
func driftConfig() governor.Config {
	cfg := governor.DefaultConfig()
	cfg.Window, cfg.DriftEvery, cfg.DriftMinWindow = 20, 5, 10
	return cfg
}

// drifter reads, then deletes elsewhere: its drift rises.
func drifter() governor.Contract {
	return governor.Contract{AgentID: "drifter", Team: "ops", Scope: []string{"read", "delete"}}
}

// steady only reads: it has drift points, all below low.
func steady() governor.Contract {
	return governor.Contract{AgentID: "steady", Team: "ops", Scope: []string{"read"}}
}

// interventionLog is an InterventionLog over a map (err: every call fails).
type interventionLog struct {
	past map[string][]trajectory.Past
	err  error
}

func (l interventionLog) Interventions(_ context.Context, id string) ([]trajectory.Past, error) {
	return l.past[id], l.err
}

// pastOfDrifter are drifter's interventions, newest first.
var pastOfDrifter = []trajectory.Past{
	{Step: 45, Type: trajectory.Throttle, Reason: "drift high", Applied: false, Time: time.Date(2025, 1, 15, 12, 7, 30, 0, time.UTC)},
	{Step: 20, Type: trajectory.Advisory, Reason: "drift moderate", Applied: true, Time: time.Date(2025, 1, 15, 12, 3, 20, 0, time.UTC)},
}

// trajectoryFixture is a real engine (drifter, steady, and "fleet", an
// agent whose name the fleet route shadows) with a control plane, served
// with the optimizer off (srv) and on (opt), with an intervention log. opt's
// fleet view waits as long as it takes for current policies.
type trajectoryFixture struct {
	eng   *governor.Engine
	plane *controlplane.Plane
	srv   *httptest.Server
	opt   *httptest.Server
}

func newTrajectoryFixture(t *testing.T) trajectoryFixture {
	t.Helper()
	clk := &fakeClock{now: time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)}
	eng, err := governor.New(driftConfig(), governor.WithClock(clk.Now))
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	for _, c := range []governor.Contract{drifter(), steady(), {AgentID: "fleet", Scope: []string{"read"}}} {
		if err := eng.SetContract(c); err != nil {
			t.Fatalf("SetContract(%s): %v", c.AgentID, err)
		}
	}
	plane, err := controlplane.New(controlplane.DefaultConfig(), eng, eng, controlplane.NewMemoryStore())
	if err != nil {
		t.Fatalf("controlplane.New: %v", err)
	}
	log := interventionLog{past: map[string][]trajectory.Past{"drifter": pastOfDrifter}}
	f := trajectoryFixture{
		eng:   eng,
		plane: plane,
		srv:   newServer(t, admin.Options{Governor: eng, Control: plane, Interventions: log}),
		opt: newServer(t, admin.Options{Governor: eng, Control: plane, Interventions: log,
			Trajectory: trajectory.NewAnalyzer(trajectory.DefaultConfig(), true), FleetBudget: time.Hour}),
	}
	act := func(agent, typ, target string) {
		body := fmt.Sprintf(`{"agent_id": %q, "action": {"type": %q, "target": %q}}`, agent, typ, target)
		if res := call(t, f.srv, http.MethodPost, "/v1/evaluate", keyOperator, body); res.status != http.StatusOK {
			t.Fatalf("evaluate %s: got %d %s", body, res.status, res.body)
		}
		clk.Advance(10 * time.Second)
	}
	for i := range 60 {
		if i < 40 {
			act("drifter", "read", "api.example.com/orders/1")
		} else {
			act("drifter", "delete", "api.example.com/users/2")
		}
		if i < 30 {
			act("steady", "read", "api.example.com/orders/1")
		}
	}
	return f
}

// get fetches path from srv with a viewer key, wants 200, and decodes it
// into v and into raw (the JSON objects' keys).
func getJSON(t *testing.T, srv *httptest.Server, path string, v any) map[string]json.RawMessage {
	t.Helper()
	res := call(t, srv, http.MethodGet, path, keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("GET %s: got %d %s, want 200", path, res.status, res.body)
	}
	res.decode(t, v)
	var raw map[string]json.RawMessage
	res.decode(t, &raw)
	return raw
}

// wantKeys checks the keys of a JSON object.
func wantKeys(t *testing.T, what string, raw json.RawMessage, want []string) {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%s: %s is not an object: %v", what, raw, err)
	}
	got := make([]string, 0, len(obj))
	for k := range obj {
		got = append(got, k)
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s keys: got %v, want %v", what, got, want)
	}
}

// withNote adds "note" to keys when the optimizer is off.
func withNote(keys []string, optimizer bool) []string {
	if optimizer {
		return keys
	}
	return append(slices.Clone(keys), "note")
}

func in01(x float64) bool { return x >= 0 && x <= 1 }

func TestTrajectoryOfADriftingAgent(t *testing.T) {
	f := newTrajectoryFixture(t)
	history, err := f.eng.DriftHistory("drifter")
	if err != nil {
		t.Fatalf("DriftHistory: %v", err)
	}
	if len(history) < 2 {
		t.Fatalf("drift history: got %d points, want at least 2", len(history))
	}
	last := history[len(history)-1]
	cases := []struct {
		name      string
		srv       *httptest.Server
		optimizer bool
	}{
		{"optimizer off", f.srv, false},
		{"optimizer on", f.opt, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tr wire.Trajectory
			raw := getJSON(t, tc.srv, "/v1/trajectory/drifter", &tr)
			body, _ := json.Marshal(raw)
			wantKeys(t, "trajectory", body, withNote(trajectoryKeys, tc.optimizer))
			wantKeys(t, "current", raw["current"], scoreKeys)
			wantKeys(t, "velocity", raw["velocity"], scoreKeys)
			wantKeys(t, "thresholds", raw["thresholds"], []string{"critical", "high", "low", "moderate"})
			wantKeys(t, "recommendation", raw["recommendation"], []string{"intervention", "source"})
			for _, list := range []string{"observed", "projected"} {
				var points []json.RawMessage
				if err := json.Unmarshal(raw[list], &points); err != nil || len(points) == 0 {
					t.Fatalf("%s: got %s, want points", list, raw[list])
				}
				wantKeys(t, list+"[0]", points[0], pointKeys)
			}

			if tr.AgentID != "drifter" || tr.RiskLevel == "low" || tr.RiskLevel == "" {
				t.Errorf("agent %q risk %q: want drifter at a risk above low", tr.AgentID, tr.RiskLevel)
			}
			if len(tr.Observed) != len(history) {
				t.Fatalf("observed: got %d points, want %d", len(tr.Observed), len(history))
			}
			for i, p := range tr.Observed {
				if p.Step != history[i].Step || p.Overall != history[i].Drift.Overall {
					t.Errorf("observed[%d]: got step %d overall %v, want %d %v", i, p.Step, p.Overall, history[i].Step, history[i].Drift.Overall)
				}
			}
			n := len(tr.Observed)
			if !(tr.Observed[n-1].Overall > tr.Observed[n-3].Overall && tr.Velocity.Overall > 0) {
				t.Errorf("overall drift %v then %v, velocity %v: want rising", tr.Observed[n-3].Overall, tr.Observed[n-1].Overall, tr.Velocity.Overall)
			}
			if tr.Current.Overall != last.Drift.Overall || tr.Current.Action != last.Drift.Action {
				t.Errorf("current: got %+v, want the last observed %+v", tr.Current, last.Drift)
			}
			if len(tr.Projected) != trajectory.DefaultConfig().Horizon {
				t.Errorf("projected: got %d points, want %d", len(tr.Projected), trajectory.DefaultConfig().Horizon)
			}
			for i, p := range tr.Projected {
				if p.Step != last.Step+i+1 || !in01(p.Overall) || !in01(p.Action) || !in01(p.Semantic) {
					t.Errorf("projected[%d]: got %+v, want step %d and drift in [0, 1]", i, p, last.Step+i+1)
				}
			}
			if want := (wire.Thresholds{Low: 0.1, Moderate: 0.2, High: 0.4, Critical: 0.6}); tr.Thresholds != want {
				t.Errorf("thresholds: got %+v, want %+v", tr.Thresholds, want)
			}
			var past []wire.TrajectoryMarker
			for _, m := range tr.Markers {
				if !m.Planned {
					past = append(past, m)
				} else if m.Step <= last.Step {
					t.Errorf("planned marker %+v: want a step after the last observed %d", m, last.Step)
				}
			}
			if want := []wire.TrajectoryMarker{{Step: 20, Type: "advisory"}, {Step: 45, Type: "throttle"}}; !slices.Equal(past, want) {
				t.Errorf("past markers: got %+v, want %+v", past, want)
			}
			if !slices.IsSortedFunc(tr.Markers, func(a, b wire.TrajectoryMarker) int { return a.Step - b.Step }) {
				t.Errorf("markers: got %+v, want them by step", tr.Markers)
			}

			if !tc.optimizer {
				if tr.Policy != nil || string(raw["policy"]) != "null" || tr.OptimizerEnabled || tr.Note != wire.OptimizerOffNote {
					t.Errorf("policy %s, optimizer_enabled %v, note %q: want null, false and the note", raw["policy"], tr.OptimizerEnabled, tr.Note)
				}
				if want := map[string]string{"moderate": "advisory", "high": "throttle", "critical": "escalate"}[tr.RiskLevel]; tr.Recommendation != (wire.Recommendation{Intervention: want, Source: "threshold"}) {
					t.Errorf("recommendation: got %+v, want %s from the threshold", tr.Recommendation, want)
				}
				return
			}
			if tr.Policy == nil || !tr.OptimizerEnabled {
				t.Fatalf("policy %s, optimizer_enabled %v: want a policy", raw["policy"], tr.OptimizerEnabled)
			}
			wantKeys(t, "policy", raw["policy"], policyKeys)
			p := tr.Policy
			if _, err := trajectory.ParseStrategy(p.Strategy); err != nil {
				t.Errorf("strategy: %v", err)
			}
			c := p.ExpectedCost
			if c.Total != c.Intervention+c.Violation || c.Total < 0 || !in01(p.Confidence) || p.DecisionTree == "" || len(p.Conditions) == 0 {
				t.Errorf("policy: got %+v, want a consistent cost, a confidence in [0, 1], a decision tree and conditions", p)
			}
			cmp := p.Comparison
			if cmp.OptimizedCost != c.Total || cmp.NaiveCost < cmp.OptimizedCost || cmp.SavingsPercent < 0 || cmp.SavingsPercent > 100 {
				t.Errorf("comparison: got %+v, want the policy's cost against a higher naive cost", cmp)
			}
			for _, s := range p.Schedule {
				if s.Step < 0 || s.Step > trajectory.DefaultConfig().Horizon {
					t.Errorf("schedule step %+v: want it counted from now, within the horizon", s)
				}
			}
			if tr.Recommendation.Source != "optimizer" {
				t.Errorf("recommendation: got %+v, want the optimizer's", tr.Recommendation)
			}
			if len(p.Schedule) > 0 && p.Schedule[0].Step == 0 && tr.Recommendation.Intervention != p.Schedule[0].Intervention {
				t.Errorf("recommendation %+v: want the schedule's step 0 %+v", tr.Recommendation, p.Schedule[0])
			}
		})
	}

	t.Run("steady agent", func(t *testing.T) {
		var tr wire.Trajectory
		getJSON(t, f.srv, "/v1/trajectory/steady", &tr)
		if tr.RiskLevel != "low" || tr.Recommendation.Intervention != "none" || len(tr.Observed) < 2 || tr.Current.Overall >= tr.Thresholds.Low {
			t.Errorf("got risk %q, recommendation %+v, %d observed, current %v; want low, none, points below low",
				tr.RiskLevel, tr.Recommendation, len(tr.Observed), tr.Current.Overall)
		}
		if len(tr.Markers) != 0 {
			t.Errorf("markers: got %+v, want [] (no interventions, no crossing)", tr.Markers)
		}
	})
}

func TestTrajectoryHistory(t *testing.T) {
	f := newTrajectoryFixture(t)
	history, _ := f.eng.DriftHistory("drifter")
	var h wire.TrajectoryHistory
	raw := getJSON(t, f.srv, "/v1/trajectory/drifter/history", &h)
	body, _ := json.Marshal(raw)
	wantKeys(t, "history", body, historyKeys)
	if h.AgentID != "drifter" || len(h.Drift) != len(history) {
		t.Fatalf("got %s with %d drift points, want drifter with %d", h.AgentID, len(h.Drift), len(history))
	}
	var drift []json.RawMessage
	if err := json.Unmarshal(raw["drift"], &drift); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, "drift[0]", drift[0], driftRecordKeys)
	for i, p := range h.Drift {
		want := history[i]
		if p.Step != want.Step || p.Overall != want.Drift.Overall || p.Confidence != want.Confidence || p.Timestamp != wire.Time(want.Time) {
			t.Errorf("drift[%d]: got %+v, want %+v", i, p, want)
		}
	}
	var tr wire.Trajectory
	getJSON(t, f.srv, "/v1/trajectory/drifter", &tr)
	if !slices.Equal(h.Projections, tr.Projected) {
		t.Errorf("projections: got %+v, want the trajectory's projected points", h.Projections)
	}
	var interventions []json.RawMessage
	if err := json.Unmarshal(raw["interventions"], &interventions); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, "interventions[0]", interventions[0], []string{"applied", "reason", "timestamp", "type"})
	at := func(s string) *string { return &s }
	want := []wire.Intervention{
		{Type: "advisory", Reason: "drift moderate", Applied: true, Timestamp: at("2025-01-15T12:03:20.000Z")},
		{Type: "throttle", Reason: "drift high", Applied: false, Timestamp: at("2025-01-15T12:07:30.000Z")},
	}
	if len(h.Interventions) != len(want) {
		t.Fatalf("interventions: got %+v, want %d oldest first", h.Interventions, len(want))
	}
	for i := range want {
		g, w := h.Interventions[i], want[i]
		if g.Type != w.Type || g.Reason != w.Reason || g.Applied != w.Applied || g.Timestamp == nil || *g.Timestamp != *w.Timestamp {
			t.Errorf("interventions[%d]: got %+v, want %+v", i, g, w)
		}
	}

	t.Run("an agent without drift or interventions", func(t *testing.T) {
		var h wire.TrajectoryHistory
		raw := getJSON(t, f.srv, "/v1/trajectory/fleet/history", &h)
		if h.AgentID != "fleet" || string(raw["drift"]) != "[]" || string(raw["interventions"]) != "[]" || len(h.Projections) == 0 {
			t.Errorf("got %s %s %s, want the agent named fleet with [] and projections", h.AgentID, raw["drift"], raw["interventions"])
		}
	})
}

func TestTrajectoryFleet(t *testing.T) {
	f := newTrajectoryFixture(t)
	cases := []struct {
		name      string
		srv       *httptest.Server
		optimizer bool
	}{
		{"optimizer off", f.srv, false},
		{"optimizer on", f.opt, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fl wire.Fleet
			raw := getJSON(t, tc.srv, "/v1/trajectory/fleet", &fl)
			body, _ := json.Marshal(raw)
			wantKeys(t, "fleet", body, withNote(fleetKeys, tc.optimizer))
			wantKeys(t, "summary", raw["summary"], []string{"critical", "high", "low", "moderate", "total"})
			var agents []json.RawMessage
			if err := json.Unmarshal(raw["agents"], &agents); err != nil || len(agents) == 0 {
				t.Fatalf("agents: got %s, want some", raw["agents"])
			}
			wantKeys(t, "agents[0]", agents[0], fleetAgentKeys)
			var ids []string
			for _, a := range fl.Agents {
				ids = append(ids, a.AgentID)
				if (a.Strategy != nil) != tc.optimizer || (a.ExpectedCost != nil) != tc.optimizer {
					t.Errorf("%s: strategy %v, expected cost %v; want both set only with the optimizer", a.AgentID, a.Strategy, a.ExpectedCost)
				}
				if want := map[bool]string{true: "current"}[tc.optimizer]; (a.PolicyState == nil) == tc.optimizer || (a.PolicyState != nil && *a.PolicyState != want) {
					t.Errorf("%s: policy_state %v; want current with the optimizer (the budget allows it), null without", a.AgentID, a.PolicyState)
				}
			}
			if tc.optimizer {
				wantKeys(t, "policy_states", raw["policy_states"], []string{"current", "pending", "stale"})
				if want := (wire.FleetPolicyStates{Current: 3}); fl.PolicyStates == nil || *fl.PolicyStates != want {
					t.Errorf("policy_states: got %+v, want %+v", fl.PolicyStates, want)
				}
			} else if string(raw["policy_states"]) != "null" {
				t.Errorf("policy_states: got %s, want null without the optimizer", raw["policy_states"])
			}
			if want := []string{"drifter", "fleet", "steady"}; !slices.Equal(ids, want) {
				t.Errorf("agents: got %v, want %v", ids, want)
			}
			if fl.Agents[0].RiskLevel == "low" || fl.Agents[2].RiskLevel != "low" {
				t.Errorf("risk levels: got %+v, want drifter above low and steady low", fl.Agents)
			}
			s := fl.Summary
			if s.Total != 3 || s.Low+s.Moderate+s.High+s.Critical != 3 || s.Low != 2 {
				t.Errorf("summary: got %+v, want 3 agents, 2 low", s)
			}
			if fl.OptimizerEnabled != tc.optimizer || (fl.Note == wire.OptimizerOffNote) == tc.optimizer {
				t.Errorf("optimizer_enabled %v, note %q: want %v", fl.OptimizerEnabled, fl.Note, tc.optimizer)
			}
			if tc.optimizer {
				var tr wire.Trajectory
				getJSON(t, tc.srv, "/v1/trajectory/drifter", &tr)
				if d := fl.Agents[0]; *d.Strategy != tr.Policy.Strategy || *d.ExpectedCost != tr.Policy.ExpectedCost.Total {
					t.Errorf("drifter: got %s at %v, want the trajectory's policy %s at %v", *d.Strategy, *d.ExpectedCost, tr.Policy.Strategy, tr.Policy.ExpectedCost.Total)
				}
			}
		})
	}
}

// TestTrajectoryFleetIsDeterministic compares the fleet view of 40 agents
// computed on 1 and on 4 goroutines, each with a cold cache and a budget
// that waits for every policy.
func TestTrajectoryFleetIsDeterministic(t *testing.T) {
	eng := fleetEngine(t, 40)
	cfg := trajectory.DefaultConfig()
	cfg.Runs = 100
	view := func(procs int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		srv := newServer(t, admin.Options{Governor: eng, Trajectory: trajectory.NewAnalyzer(cfg, true), FleetBudget: time.Hour})
		res := call(t, srv, http.MethodGet, "/v1/trajectory/fleet", keyViewer, "")
		if res.status != http.StatusOK {
			t.Fatalf("fleet on %d: got %d %s", procs, res.status, res.body)
		}
		return res.body
	}
	one, four := view(1), view(4)
	if !bytes.Equal(one, four) {
		t.Errorf("fleet on 1 and 4 goroutines: got different answers:\n%s\n%s", one, four)
	}
	var fl wire.Fleet
	if err := json.Unmarshal(one, &fl); err != nil {
		t.Fatal(err)
	}
	if fl.Summary.Total != 40 || fl.Summary.Low == 40 {
		t.Errorf("summary: got %+v, want 40 agents, not all low", fl.Summary)
	}
	if fl.PolicyStates == nil || fl.PolicyStates.Current != 40 {
		t.Errorf("policy_states: got %+v, want all 40 current", fl.PolicyStates)
	}
}

func TestTrajectorySimulate(t *testing.T) {
	f := newTrajectoryFixture(t)
	var tr wire.Trajectory
	getJSON(t, f.srv, "/v1/trajectory/drifter", &tr)
	lastStep := tr.Observed[len(tr.Observed)-1].Step
	before, _ := f.eng.Status("drifter")
	const horizon = 40
	for _, strategy := range trajectory.Strategies() {
		for _, opt := range []bool{false, true} {
			srv := map[bool]*httptest.Server{false: f.srv, true: f.opt}[opt]
			t.Run(fmt.Sprintf("%s optimizer %v", strategy, opt), func(t *testing.T) {
				res := call(t, srv, http.MethodPost, "/v1/trajectory/simulate", keyOperator,
					fmt.Sprintf(`{"agent_id": "drifter", "strategy": %q, "horizon": %d}`, strategy, horizon))
				if res.status != http.StatusOK {
					t.Fatalf("got %d %s, want 200", res.status, res.body)
				}
				wantKeys(t, "simulation", res.body, withNote(simulationKeys, opt))
				var sim wire.Simulation
				res.decode(t, &sim)
				if sim.AgentID != "drifter" || sim.Strategy != string(strategy) || sim.Horizon != horizon {
					t.Errorf("got %s %s %d, want drifter %s %d", sim.AgentID, sim.Strategy, sim.Horizon, strategy, horizon)
				}
				if sim.CurrentDrift != tr.Current.Overall || sim.CurrentVelocity != tr.Velocity.Overall {
					t.Errorf("start: got %v %v, want the trajectory's %v %v", sim.CurrentDrift, sim.CurrentVelocity, tr.Current.Overall, tr.Velocity.Overall)
				}
				if len(sim.Curve) != horizon {
					t.Fatalf("curve: got %d points, want %d", len(sim.Curve), horizon)
				}
				for i, p := range sim.Curve {
					if p.Step != i+1 || !in01(p.Drift) {
						t.Errorf("curve[%d]: got %+v, want step %d and drift in [0, 1]", i, p, i+1)
					}
				}
				for _, m := range sim.Markers {
					if !m.Planned || m.Step < lastStep || m.Step > lastStep+horizon {
						t.Errorf("marker %+v: want planned, at an absolute step from %d", m, lastStep)
					}
				}
				switch strategy {
				case trajectory.NoOp:
					if len(sim.Markers) != 0 {
						t.Errorf("no_op markers: got %+v, want none", sim.Markers)
					}
				case trajectory.ImmediateEscalate:
					if want := []wire.TrajectoryMarker{{Step: lastStep, Type: "escalate", Planned: true}}; !slices.Equal(sim.Markers, want) {
						t.Errorf("immediate_escalate markers: got %+v, want %+v", sim.Markers, want)
					}
				}
				if opt != (sim.EstimatedTotalCost != nil) || sim.OptimizerEnabled != opt || (sim.Note == wire.OptimizerOffNote) == opt {
					t.Errorf("estimated_total_cost %v, optimizer_enabled %v, note %q: want a cost only with the optimizer", sim.EstimatedTotalCost, sim.OptimizerEnabled, sim.Note)
				}
				if sim.EstimatedTotalCost != nil && (*sim.EstimatedTotalCost < 0 || math.IsNaN(*sim.EstimatedTotalCost)) {
					t.Errorf("estimated_total_cost: got %v, want a cost", *sim.EstimatedTotalCost)
				}
			})
		}
	}

	t.Run("nothing is applied", func(t *testing.T) {
		ds, err := f.plane.List(context.Background())
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(ds) != 0 {
			t.Errorf("directives: got %d, want none", len(ds))
		}
		var list wire.DirectiveList
		getJSON(t, f.srv, "/v1/control/directives", &list)
		if len(list.Directives) != 0 {
			t.Errorf("GET /v1/control/directives: got %+v, want none", list.Directives)
		}
		after, _ := f.eng.Status("drifter")
		if after.Observations != before.Observations || after.Quarantined || after.Suspended || after.Thresholds != before.Thresholds {
			t.Errorf("status: got %d observations, quarantined %v, thresholds %+v; want it unchanged", after.Observations, after.Quarantined, after.Thresholds)
		}
		var again wire.Trajectory
		getJSON(t, f.srv, "/v1/trajectory/drifter", &again)
		if !slices.Equal(again.Observed, tr.Observed) {
			t.Errorf("observed drift changed by simulations")
		}
	})
}

func TestTrajectoryThresholdsAfterTighten(t *testing.T) {
	f := newTrajectoryFixture(t)
	res := call(t, f.srv, http.MethodPost, "/v1/control/directives", keyOperator,
		`{"type":"tighten","target":{"agent_ids":["drifter"]},"parameters":{"factor":0.5}}`)
	if res.status != http.StatusCreated {
		t.Fatalf("tighten: got %d %s", res.status, res.body)
	}
	var tr wire.Trajectory
	getJSON(t, f.srv, "/v1/trajectory/drifter", &tr)
	if want := (wire.Thresholds{Low: 0.05, Moderate: 0.1, High: 0.2, Critical: 0.3}); tr.Thresholds != want {
		t.Errorf("thresholds: got %+v, want %+v", tr.Thresholds, want)
	}
}
