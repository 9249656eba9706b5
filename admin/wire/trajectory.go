package wire

import (
	"cmp"
	"math"
	"slices"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// OptimizerOffNote is the note of the trajectory, fleet and simulate answers
// when the policy optimizer is off.
const OptimizerOffNote = "the policy optimizer is off (runtime.enable_optimizer: false): no costs, policies or comparisons"

// The trajectory bodies (API.md section 10). Steps are observation counts:
// Observed, Projected and markers are on the agent's absolute axis (the
// observation count at which drift was, or will be, computed), while a
// policy's schedule and a simulation's curve count from now (0 = now).
// Numbers are sent as computed, never rounded; a non-finite value, which
// the analysis does not produce, would be sent as 0.

// Trajectory is the body of GET /v1/trajectory/{agent_id}.
type Trajectory struct {
	AgentID string `json:"agent_id"`
	// RiskLevel is low, moderate, high or critical: the overall drift
	// projected 20 observations ahead against the thresholds.
	RiskLevel string `json:"risk_level"`
	// Current is the latest observed drift; Velocity its slope per
	// observation.
	Current   DriftScores  `json:"current"`
	Velocity  DriftScores  `json:"velocity"`
	Observed  []DriftPoint `json:"observed"`
	Projected []DriftPoint `json:"projected"`
	// Thresholds are the agent's effective drift thresholds (after
	// tighten).
	Thresholds     Thresholds         `json:"thresholds"`
	Markers        []TrajectoryMarker `json:"markers"`
	Recommendation Recommendation     `json:"recommendation"`
	// Policy is null when the optimizer is off.
	Policy           *Policy `json:"policy"`
	OptimizerEnabled bool    `json:"optimizer_enabled"`
	// Note is OptimizerOffNote when the optimizer is off, absent otherwise.
	Note string `json:"note,omitempty"`
}

// DriftScores are drift per distribution and overall (the "current" and
// "velocity" of a trajectory).
type DriftScores struct {
	Action   float64 `json:"action"`
	Target   float64 `json:"target"`
	Temporal float64 `json:"temporal"`
	Outcome  float64 `json:"outcome"`
	Semantic float64 `json:"semantic"`
	Overall  float64 `json:"overall"`
}

// DriftPoint is one observed or projected drift at an observation count.
type DriftPoint struct {
	Step     int     `json:"step"`
	Action   float64 `json:"action"`
	Target   float64 `json:"target"`
	Temporal float64 `json:"temporal"`
	Outcome  float64 `json:"outcome"`
	Semantic float64 `json:"semantic"`
	Overall  float64 `json:"overall"`
}

// TrajectoryMarker is an intervention on the chart: planned (where the
// projection, or a simulated strategy, intervenes) or past (Planned false).
// Type is advisory, throttle or escalate; Step is an observation count.
type TrajectoryMarker struct {
	Step    int    `json:"step"`
	Type    string `json:"type"`
	Planned bool   `json:"planned"`
}

// Recommendation is the intervention to apply now (none, advisory, throttle
// or escalate) and its source: threshold (the risk level) or optimizer.
type Recommendation struct {
	Intervention string `json:"intervention"`
	Source       string `json:"source"`
}

// Policy is the optimizer's cheapest strategy and how to carry it out.
type Policy struct {
	Strategy string `json:"strategy"`
	// Schedule lists the interventions on the expected (noise-free) path;
	// each step counts observations from now (0 = now).
	Schedule     []PolicyStep      `json:"schedule"`
	Conditions   []PolicyCondition `json:"conditions"`
	ExpectedCost PolicyCost        `json:"expected_cost"`
	// Confidence is in [0, 1].
	Confidence   float64          `json:"confidence"`
	DecisionTree string           `json:"decision_tree"`
	Comparison   PolicyComparison `json:"comparison"`
}

// PolicyStep is one scheduled intervention, Step observations from now.
type PolicyStep struct {
	Step         int    `json:"step"`
	Intervention string `json:"intervention"`
}

// PolicyCondition is a conditional clause: if If holds, do Then.
type PolicyCondition struct {
	If   string `json:"if"`
	Then string `json:"then"`
}

// PolicyCost is an expected cost; Total = Intervention + Violation.
type PolicyCost struct {
	Intervention float64 `json:"intervention"`
	Violation    float64 `json:"violation"`
	Total        float64 `json:"total"`
}

// PolicyComparison sets the policy against immediate_escalate:
// SavingsPercent = (NaiveCost − OptimizedCost) / NaiveCost × 100.
type PolicyComparison struct {
	OptimizedCost  float64 `json:"optimized_cost"`
	NaiveCost      float64 `json:"naive_cost"`
	SavingsPercent float64 `json:"savings_percent"`
}

// TrajectoryHistory is the body of GET /v1/trajectory/{agent_id}/history.
type TrajectoryHistory struct {
	AgentID string `json:"agent_id"`
	// Drift holds every drift recomputation kept, oldest first.
	Drift []DriftRecord `json:"drift"`
	// Projections are the projected points (as Trajectory.Projected).
	Projections []DriftPoint `json:"projections"`
	// Interventions are the agent's past interventions, oldest first.
	Interventions []Intervention `json:"interventions"`
}

// DriftRecord is one drift recomputation: its observation count, time,
// scores and confidence.
type DriftRecord struct {
	Step       int     `json:"step"`
	Timestamp  string  `json:"timestamp"`
	Action     float64 `json:"action"`
	Target     float64 `json:"target"`
	Temporal   float64 `json:"temporal"`
	Outcome    float64 `json:"outcome"`
	Semantic   float64 `json:"semantic"`
	Overall    float64 `json:"overall"`
	Confidence float64 `json:"confidence"`
}

// Intervention is a past intervention: its type (advisory, throttle or
// escalate, or none), why, whether it was applied, and when (null when
// unknown).
type Intervention struct {
	Type      string  `json:"type"`
	Reason    string  `json:"reason"`
	Applied   bool    `json:"applied"`
	Timestamp *string `json:"timestamp"`
}

// Fleet is the body of GET /v1/trajectory/fleet.
type Fleet struct {
	// Agents are sorted by agent id.
	Agents  []FleetAgent `json:"agents"`
	Summary FleetSummary `json:"summary"`
	// PolicyStates counts the agents by policy state; null when the
	// optimizer is off.
	PolicyStates     *FleetPolicyStates `json:"policy_states"`
	OptimizerEnabled bool               `json:"optimizer_enabled"`
	// Note is OptimizerOffNote when the optimizer is off, absent otherwise.
	Note string `json:"note,omitempty"`
}

// FleetAgent is one agent of the fleet view. Strategy and ExpectedCost (the
// policy's expected total) are null when the optimizer is off or the
// policy is pending. PolicyState is current (computed from the agent's
// current drift and thresholds), stale (the agent's most recent policy,
// computed from earlier ones) or pending (none yet); null when the
// optimizer is off.
type FleetAgent struct {
	AgentID      string   `json:"agent_id"`
	RiskLevel    string   `json:"risk_level"`
	Strategy     *string  `json:"strategy"`
	ExpectedCost *float64 `json:"expected_cost"`
	PolicyState  *string  `json:"policy_state"`
}

// FleetPolicyStates counts the agents of the fleet view by policy state;
// their sum is the summary's total.
type FleetPolicyStates struct {
	Current int `json:"current"`
	Stale   int `json:"stale"`
	Pending int `json:"pending"`
}

// FleetSummary counts the agents by risk level.
type FleetSummary struct {
	Total    int `json:"total"`
	Low      int `json:"low"`
	Moderate int `json:"moderate"`
	High     int `json:"high"`
	Critical int `json:"critical"`
}

// SimulateRequest is the body of POST /v1/trajectory/simulate. Every field
// is required; Horizon is a pointer so that a missing horizon is told from
// 0.
type SimulateRequest struct {
	AgentID  string `json:"agent_id"`
	Strategy string `json:"strategy"`
	Horizon  *int   `json:"horizon"`
}

// Simulation is the answer of POST /v1/trajectory/simulate.
type Simulation struct {
	AgentID  string `json:"agent_id"`
	Strategy string `json:"strategy"`
	Horizon  int    `json:"horizon"`
	// CurrentDrift and CurrentVelocity are the overall drift and velocity
	// the simulation starts from.
	CurrentDrift    float64 `json:"current_drift"`
	CurrentVelocity float64 `json:"current_velocity"`
	// Curve holds Horizon points: the mean overall drift Step observations
	// from now, Step = 1..Horizon.
	Curve []CurvePoint `json:"curve"`
	// Markers are where the strategy intervenes on the expected path, at
	// absolute observation counts (planned).
	Markers []TrajectoryMarker `json:"markers"`
	// EstimatedTotalCost is the strategy's expected total cost; null when
	// the optimizer is off.
	EstimatedTotalCost *float64 `json:"estimated_total_cost"`
	OptimizerEnabled   bool     `json:"optimizer_enabled"`
	// Note is OptimizerOffNote when the optimizer is off, absent otherwise.
	Note string `json:"note,omitempty"`
}

// CurvePoint is one point of a simulated drift curve.
type CurvePoint struct {
	Step  int     `json:"step"`
	Drift float64 `json:"drift"`
}

// NewTrajectory converts an analysis; optimizer says whether the optimizer
// is on (the analysis then has a policy).
func NewTrajectory(a trajectory.Analysis, optimizer bool) Trajectory {
	t := a.Trajectory
	out := Trajectory{
		AgentID:          a.AgentID,
		RiskLevel:        string(t.Risk),
		Current:          newDriftScores(t.Current),
		Velocity:         newDriftScores(t.Velocity),
		Observed:         newDriftPoints(t.Observed),
		Projected:        newDriftPoints(t.Projected),
		Thresholds:       finiteThresholds(t.Thresholds),
		Markers:          newMarkers(t.Markers),
		Recommendation:   Recommendation{Intervention: string(a.Recommendation.Intervention), Source: a.Recommendation.Source},
		Policy:           newPolicy(a.Policy),
		OptimizerEnabled: optimizer,
	}
	if !optimizer {
		out.Note = OptimizerOffNote
	}
	return out
}

// NewTrajectoryHistory converts an agent's drift history, the projection of
// its trajectory and its past interventions, sorted oldest first (by time,
// then step; order kept at a tie).
func NewTrajectoryHistory(agentID string, history []governor.DriftPoint, t trajectory.Trajectory, past []trajectory.Past) TrajectoryHistory {
	out := TrajectoryHistory{
		AgentID:       agentID,
		Drift:         make([]DriftRecord, len(history)),
		Projections:   newDriftPoints(t.Projected),
		Interventions: make([]Intervention, len(past)),
	}
	for i, p := range history {
		out.Drift[i] = DriftRecord{
			Step:       p.Step,
			Timestamp:  Time(p.Time),
			Action:     finite(p.Drift.Action),
			Target:     finite(p.Drift.Target),
			Temporal:   finite(p.Drift.Temporal),
			Outcome:    finite(p.Drift.Outcome),
			Semantic:   finite(p.Drift.Semantic),
			Overall:    finite(p.Drift.Overall),
			Confidence: finite(p.Confidence),
		}
	}
	sorted := slices.Clone(past)
	slices.SortStableFunc(sorted, func(x, y trajectory.Past) int {
		return cmp.Or(x.Time.Compare(y.Time), cmp.Compare(x.Step, y.Step))
	})
	for i, p := range sorted {
		out.Interventions[i] = Intervention{Type: string(p.Type), Reason: p.Reason, Applied: p.Applied, Timestamp: OptionalTime(p.Time)}
	}
	return out
}

// NewFleet converts the analyses of a fleet: one line per agent, sorted by
// agent id, and the counts per risk level and, with the optimizer on, per
// policy state. optimizer says whether the optimizer is on. An analysis
// without a PolicyState (built by hand, not by the Analyzer) counts as
// current with a policy and pending without.
func NewFleet(as []trajectory.Analysis, optimizer bool) Fleet {
	out := Fleet{Agents: make([]FleetAgent, len(as)), OptimizerEnabled: optimizer}
	if optimizer {
		out.PolicyStates = &FleetPolicyStates{}
	} else {
		out.Note = OptimizerOffNote
	}
	for i, a := range as {
		fa := FleetAgent{AgentID: a.AgentID, RiskLevel: string(a.Trajectory.Risk)}
		if a.Policy != nil {
			s, c := string(a.Policy.Strategy), finite(a.Policy.Expected.Total)
			fa.Strategy, fa.ExpectedCost = &s, &c
		}
		if optimizer {
			st := policyState(a)
			fa.PolicyState = &st
			switch trajectory.PolicyState(st) {
			case trajectory.PolicyCurrent:
				out.PolicyStates.Current++
			case trajectory.PolicyStale:
				out.PolicyStates.Stale++
			default:
				out.PolicyStates.Pending++
			}
		}
		out.Agents[i] = fa
		switch a.Trajectory.Risk {
		case trajectory.RiskLow:
			out.Summary.Low++
		case trajectory.RiskModerate:
			out.Summary.Moderate++
		case trajectory.RiskHigh:
			out.Summary.High++
		case trajectory.RiskCritical:
			out.Summary.Critical++
		}
	}
	out.Summary.Total = len(as)
	slices.SortStableFunc(out.Agents, func(x, y FleetAgent) int { return cmp.Compare(x.AgentID, y.AgentID) })
	return out
}

// policyState is the analysis's policy state, current or pending (by its
// policy) when it has none.
func policyState(a trajectory.Analysis) string {
	switch {
	case a.PolicyState != "":
		return string(a.PolicyState)
	case a.Policy != nil:
		return string(trajectory.PolicyCurrent)
	}
	return string(trajectory.PolicyPending)
}

// NewSimulation converts a simulation of the agent; optimizer says whether
// the optimizer is on (without it the estimated cost is null).
func NewSimulation(agentID string, s trajectory.Simulation, optimizer bool) Simulation {
	out := Simulation{
		AgentID:          agentID,
		Strategy:         string(s.Strategy),
		Horizon:          s.Horizon,
		CurrentDrift:     finite(s.CurrentDrift),
		CurrentVelocity:  finite(s.CurrentVelocity),
		Curve:            make([]CurvePoint, len(s.Curve)),
		Markers:          newMarkers(s.Markers),
		OptimizerEnabled: optimizer,
	}
	for i, d := range s.Curve {
		out.Curve[i] = CurvePoint{Step: i + 1, Drift: finite(d)}
	}
	if optimizer {
		c := finite(s.EstimatedCost)
		out.EstimatedTotalCost = &c
	} else {
		out.Note = OptimizerOffNote
	}
	return out
}

func newPolicy(p *trajectory.Policy) *Policy {
	if p == nil {
		return nil
	}
	out := &Policy{
		Strategy:   string(p.Strategy),
		Schedule:   make([]PolicyStep, len(p.Schedule)),
		Conditions: make([]PolicyCondition, len(p.Conditions)),
		ExpectedCost: PolicyCost{
			Intervention: finite(p.Expected.Intervention),
			Violation:    finite(p.Expected.Violation),
			Total:        finite(p.Expected.Total),
		},
		Confidence:   finite(p.Confidence),
		DecisionTree: p.DecisionTree,
		Comparison: PolicyComparison{
			OptimizedCost:  finite(p.Comparison.OptimizedCost),
			NaiveCost:      finite(p.Comparison.NaiveCost),
			SavingsPercent: finite(p.Comparison.SavingsPercent),
		},
	}
	for i, s := range p.Schedule {
		out.Schedule[i] = PolicyStep{Step: s.Step, Intervention: string(s.Intervention)}
	}
	for i, c := range p.Conditions {
		out.Conditions[i] = PolicyCondition{If: c.If, Then: c.Then}
	}
	return out
}

func newDriftScores(d governor.DriftScores) DriftScores {
	return DriftScores{
		Action:   finite(d.Action),
		Target:   finite(d.Target),
		Temporal: finite(d.Temporal),
		Outcome:  finite(d.Outcome),
		Semantic: finite(d.Semantic),
		Overall:  finite(d.Overall),
	}
}

func newDriftPoints(ps []trajectory.Point) []DriftPoint {
	out := make([]DriftPoint, len(ps))
	for i, p := range ps {
		d := newDriftScores(p.Drift)
		out[i] = DriftPoint{Step: p.Step, Action: d.Action, Target: d.Target, Temporal: d.Temporal,
			Outcome: d.Outcome, Semantic: d.Semantic, Overall: d.Overall}
	}
	return out
}

func newMarkers(ms []trajectory.Marker) []TrajectoryMarker {
	out := make([]TrajectoryMarker, len(ms))
	for i, m := range ms {
		out[i] = TrajectoryMarker{Step: m.Step, Type: string(m.Type), Planned: m.Planned}
	}
	return out
}

func finiteThresholds(t governor.Thresholds) Thresholds {
	return Thresholds{Low: finite(t.Low), Moderate: finite(t.Moderate), High: finite(t.High), Critical: finite(t.Critical)}
}

// finite returns x, or 0 when x is NaN or infinite (which JSON cannot
// carry).
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
