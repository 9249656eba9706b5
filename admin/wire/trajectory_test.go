package wire_test

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

var thresholds = governor.Thresholds{Low: 0.1, Moderate: 0.2, High: 0.4, Critical: 0.6}

func TestTrajectoryConversionsNeverNull(t *testing.T) {
	empty := trajectory.NewAnalyzer(trajectory.DefaultConfig(), false).Analyze("a1", nil, thresholds, nil)
	withPolicy := trajectory.NewAnalyzer(trajectory.DefaultConfig(), true).Analyze("a1", nil, thresholds, nil)
	pending, _ := trajectory.NewAnalyzer(trajectory.DefaultConfig(), true).Cached("a1", nil, thresholds, nil)
	tests := []struct {
		name     string
		v        any
		nullable []string
	}{
		{"trajectory without optimizer", wire.NewTrajectory(empty, false), []string{`"policy":null`}},
		{"trajectory with a policy", wire.NewTrajectory(withPolicy, true), nil},
		{"history", wire.NewTrajectoryHistory("a1", nil, empty.Trajectory, nil), nil},
		{"fleet", wire.NewFleet(nil, false), []string{`"policy_states":null`}},
		{"fleet with the optimizer", wire.NewFleet(nil, true), nil},
		{"fleet agent without optimizer", wire.NewFleet([]trajectory.Analysis{empty}, false),
			[]string{`"strategy":null`, `"expected_cost":null`, `"policy_state":null`, `"policy_states":null`}},
		{"fleet agent with a policy", wire.NewFleet([]trajectory.Analysis{withPolicy}, true), nil},
		{"fleet agent pending", wire.NewFleet([]trajectory.Analysis{pending}, true), []string{`"strategy":null`, `"expected_cost":null`}},
		{"simulation without optimizer", wire.NewSimulation("a1", trajectory.Simulation{}, false), []string{`"estimated_total_cost":null`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			s := string(b)
			for _, n := range tt.nullable {
				s = strings.Replace(s, n, "", 1)
			}
			if strings.Contains(s, ":null") {
				t.Errorf("json: got %s, want null only for %v", b, tt.nullable)
			}
		})
	}
}

// TestTrajectoryConversionsAreFinite feeds NaN and infinities, which JSON
// cannot carry: every answer still encodes, with 0 in their place.
func TestTrajectoryConversionsAreFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	bad := governor.DriftScores{Action: nan, Target: inf, Temporal: -inf, Outcome: nan, Semantic: nan, Overall: nan}
	a := trajectory.Analysis{
		AgentID: "a1",
		Trajectory: trajectory.Trajectory{
			Current: bad, Velocity: bad, Risk: trajectory.RiskHigh,
			Observed:   []trajectory.Point{{Step: 10, Drift: bad}},
			Projected:  []trajectory.Point{{Step: 11, Drift: bad}},
			Thresholds: governor.Thresholds{Low: nan, Moderate: inf, High: nan, Critical: nan},
		},
		Policy: &trajectory.Policy{Strategy: trajectory.NoOp, Expected: trajectory.Cost{Intervention: nan, Violation: inf, Total: nan},
			Confidence: nan, Comparison: trajectory.Comparison{OptimizedCost: nan, NaiveCost: inf, SavingsPercent: nan}},
	}
	history := []governor.DriftPoint{{Step: 10, Drift: bad, Confidence: nan}}
	for name, v := range map[string]any{
		"trajectory": wire.NewTrajectory(a, true),
		"history":    wire.NewTrajectoryHistory("a1", history, a.Trajectory, nil),
		"fleet":      wire.NewFleet([]trajectory.Analysis{a}, true),
		"simulation": wire.NewSimulation("a1", trajectory.Simulation{CurrentDrift: nan, CurrentVelocity: inf, Curve: []float64{nan}, EstimatedCost: nan}, true),
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Errorf("%s: marshal: %v", name, err)
		}
		if strings.Contains(string(b), "NaN") || strings.Contains(string(b), "Inf") {
			t.Errorf("%s: got %s, want finite numbers", name, b)
		}
	}
}

func TestNewFleet(t *testing.T) {
	at := func(id string, r trajectory.RiskLevel, p *trajectory.Policy, st trajectory.PolicyState) trajectory.Analysis {
		return trajectory.Analysis{AgentID: id, Trajectory: trajectory.Trajectory{Risk: r}, Policy: p, PolicyState: st}
	}
	p := &trajectory.Policy{Strategy: trajectory.Graduated, Expected: trajectory.Cost{Intervention: 1, Violation: 2, Total: 3}}
	f := wire.NewFleet([]trajectory.Analysis{
		at("c", trajectory.RiskCritical, p, trajectory.PolicyStale), at("a", trajectory.RiskLow, p, trajectory.PolicyCurrent),
		at("b", trajectory.RiskHigh, p, trajectory.PolicyCurrent), at("d", trajectory.RiskHigh, nil, trajectory.PolicyPending),
	}, true)
	var ids []string
	for _, a := range f.Agents {
		ids = append(ids, a.AgentID)
		if a.AgentID == "d" {
			if a.Strategy != nil || a.ExpectedCost != nil || a.PolicyState == nil || *a.PolicyState != "pending" {
				t.Errorf("d: got strategy %v cost %v state %v, want null, null and pending", a.Strategy, a.ExpectedCost, a.PolicyState)
			}
			continue
		}
		if a.Strategy == nil || *a.Strategy != "graduated" || a.ExpectedCost == nil || *a.ExpectedCost != 3 {
			t.Errorf("%s: got strategy %v cost %v, want graduated at the total 3", a.AgentID, a.Strategy, a.ExpectedCost)
		}
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d"}) {
		t.Errorf("agents: got %v, want them by id", ids)
	}
	if want := (wire.FleetSummary{Total: 4, Low: 1, High: 2, Critical: 1}); f.Summary != want {
		t.Errorf("summary: got %+v, want %+v", f.Summary, want)
	}
	if want := (wire.FleetPolicyStates{Current: 2, Stale: 1, Pending: 1}); f.PolicyStates == nil || *f.PolicyStates != want {
		t.Errorf("policy_states: got %+v, want %+v", f.PolicyStates, want)
	}
	if !f.OptimizerEnabled || f.Note != "" {
		t.Errorf("optimizer_enabled %v, note %q: want true and none", f.OptimizerEnabled, f.Note)
	}
}

func TestNewFleetPolicyState(t *testing.T) {
	p := &trajectory.Policy{Strategy: trajectory.NoOp}
	cases := []struct {
		name      string
		a         trajectory.Analysis
		optimizer bool
		want      string // "" for null
	}{
		{"current", trajectory.Analysis{Policy: p, PolicyState: trajectory.PolicyCurrent}, true, "current"},
		{"stale", trajectory.Analysis{Policy: p, PolicyState: trajectory.PolicyStale}, true, "stale"},
		{"pending", trajectory.Analysis{PolicyState: trajectory.PolicyPending}, true, "pending"},
		{"unlabelled with a policy", trajectory.Analysis{Policy: p}, true, "current"},
		{"unlabelled without a policy", trajectory.Analysis{}, true, "pending"},
		{"optimizer off", trajectory.Analysis{}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := wire.NewFleet([]trajectory.Analysis{tc.a}, tc.optimizer)
			got := f.Agents[0].PolicyState
			if (got == nil) != (tc.want == "") || (got != nil && *got != tc.want) {
				t.Errorf("policy_state: got %v, want %q", got, tc.want)
			}
			if (f.PolicyStates == nil) == tc.optimizer {
				t.Errorf("policy_states: got %+v, want them only with the optimizer", f.PolicyStates)
			}
			if ps := f.PolicyStates; ps != nil && ps.Current+ps.Stale+ps.Pending != 1 {
				t.Errorf("policy_states: got %+v, want one agent", *ps)
			}
		})
	}
}

func TestNewTrajectoryHistorySortsInterventions(t *testing.T) {
	t0 := time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	past := []trajectory.Past{
		{Step: 30, Type: trajectory.Throttle, Reason: "third", Time: t0.Add(2 * time.Minute)},
		{Step: 10, Type: trajectory.Advisory, Reason: "first", Applied: true, Time: t0},
		{Step: 20, Type: trajectory.Escalate, Reason: "second", Time: t0},
		{Step: 5, Type: trajectory.Advisory, Reason: "undated"},
	}
	h := wire.NewTrajectoryHistory("a1", nil, trajectory.Trajectory{}, past)
	var reasons []string
	for _, iv := range h.Interventions {
		reasons = append(reasons, iv.Reason)
	}
	if want := []string{"undated", "first", "second", "third"}; !slices.Equal(reasons, want) {
		t.Errorf("order: got %v, want %v (by time, then step)", reasons, want)
	}
	if h.Interventions[0].Timestamp != nil || h.Interventions[1].Timestamp == nil || *h.Interventions[1].Timestamp != "2025-01-15T12:00:00.000Z" {
		t.Errorf("timestamps: got %v and %v, want null for the undated one", h.Interventions[0].Timestamp, h.Interventions[1].Timestamp)
	}
	if past[0].Reason != "third" {
		t.Errorf("the caller's slice was reordered")
	}
}

func TestNewSimulationCountsStepsFromNow(t *testing.T) {
	s := wire.NewSimulation("a1", trajectory.Simulation{Strategy: trajectory.EarlyAdvisory, Horizon: 3, Curve: []float64{0.1, 0.2, 0.3},
		Markers: []trajectory.Marker{{Step: 60, Type: trajectory.Advisory, Planned: true}}, EstimatedCost: 1}, true)
	if want := []wire.CurvePoint{{Step: 1, Drift: 0.1}, {Step: 2, Drift: 0.2}, {Step: 3, Drift: 0.3}}; !slices.Equal(s.Curve, want) {
		t.Errorf("curve: got %+v, want %+v", s.Curve, want)
	}
	if want := []wire.TrajectoryMarker{{Step: 60, Type: "advisory", Planned: true}}; !slices.Equal(s.Markers, want) {
		t.Errorf("markers: got %+v, want the absolute %+v", s.Markers, want)
	}
	if s.EstimatedTotalCost == nil || *s.EstimatedTotalCost != 1 || s.Note != "" {
		t.Errorf("cost %v, note %q: want 1 and no note", s.EstimatedTotalCost, s.Note)
	}
}
