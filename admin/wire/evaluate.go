package wire

import (
	"maps"

	"github.com/vigilhq/vigil/governor"
)

// EvaluateRequest is the body of POST /v1/evaluate and POST
// /v1/playground/evaluate. Action is a pointer so that a missing action can
// be told from an empty one; Context is optional.
type EvaluateRequest struct {
	AgentID string          `json:"agent_id"`
	Action  *ActionRequest  `json:"action"`
	Context *ContextRequest `json:"context,omitempty"`
}

// ActionRequest is the action to evaluate: its type (required), target and
// parameters (a JSON object).
type ActionRequest struct {
	Type       string         `json:"type"`
	Target     string         `json:"target"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// ContextRequest is what the caller knows about the circumstances of the
// action; every field is optional.
type ContextRequest struct {
	Instruction     string `json:"instruction,omitempty"`
	Origin          string `json:"origin,omitempty"`
	Mode            string `json:"mode,omitempty"`
	Urgency         string `json:"urgency,omitempty"`
	DelegationDepth int    `json:"delegation_depth,omitempty"`
	ChildAgents     int    `json:"child_agents,omitempty"`
	InputCategory   string `json:"input_category,omitempty"`
}

// ToGovernor converts r into a governor request with the given action source
// ("api" for the admin API). It does not validate r; a nil Action gives an
// empty action.
func (r EvaluateRequest) ToGovernor(source string) governor.Request {
	req := governor.Request{AgentID: r.AgentID}
	if r.Action != nil {
		req.Action = governor.Action{
			Type:       r.Action.Type,
			Target:     r.Action.Target,
			Parameters: maps.Clone(r.Action.Parameters),
		}
	}
	req.Action.Source = source
	if c := r.Context; c != nil {
		req.Context = governor.Context{
			Instruction:     c.Instruction,
			Origin:          c.Origin,
			Mode:            c.Mode,
			Urgency:         c.Urgency,
			DelegationDepth: c.DelegationDepth,
			ChildAgents:     c.ChildAgents,
			InputCategory:   c.InputCategory,
		}
	}
	return req
}

// Evaluation is the verdict object: the answer of POST /v1/evaluate and POST
// /v1/playground/evaluate.
type Evaluation struct {
	ActionID        string           `json:"action_id"`
	AgentID         string           `json:"agent_id"`
	Decision        string           `json:"decision"`
	UCS             float64          `json:"ucs"`
	Tier            int              `json:"tier"`
	Reasoning       string           `json:"reasoning"`
	Vetoes          []string         `json:"vetoes"`
	Modifications   []string         `json:"modifications"`
	DimensionScores []DimensionScore `json:"dimension_scores"`
	ActionToPass    ActionToPass     `json:"action_to_pass"`
	Reversibility   Reversibility    `json:"reversibility"`
	// Directives are the ids of the directives bound to the agent.
	Directives []string `json:"directives"`
	// Advisory is a broadcast reminder for the agent ("" for none).
	Advisory         string `json:"advisory"`
	EvaluationTimeUS int64  `json:"evaluation_time_us"`
	// Ledger is the ledger entry that records the evaluation; null when
	// nothing was recorded (the playground, or no ledger).
	Ledger *LedgerRef `json:"ledger"`
	// ApprovalID is the pending approval requested for an ESCALATE of POST
	// /v1/evaluate (API.md section 9); absent for every other verdict, in
	// the playground and without approvals.
	ApprovalID string `json:"approval_id,omitempty"`
}

// LedgerRef points at one ledger entry. Spooled says the entry waits in
// the ledger's local spool (the store, Redis, was unreachable): Sequence is
// then 0, the entry is numbered when it is replayed.
type LedgerRef struct {
	AgentID  string `json:"agent_id"`
	Sequence int64  `json:"sequence"`
	Spooled  bool   `json:"spooled,omitempty"`
}

// DimensionScore is one dimension's assessment: score 0 is maximum concern,
// 1 none.
type DimensionScore struct {
	Dimension  string  `json:"dimension"`
	Score      float64 `json:"score"`
	Weight     float64 `json:"weight"`
	Confidence float64 `json:"confidence"`
	Veto       bool    `json:"veto"`
	Reasoning  string  `json:"reasoning"`
}

// ActionToPass says what would have to change for another verdict. Which
// fields are present depends on the verdict: DENY has dimension_gaps,
// ucs_needed and gap; ALLOW has margin_to_deny and closest_veto_dimension;
// ESCALATE and MODIFY have ucs_needed, gap and requires; SUSPEND has
// requires.
type ActionToPass struct {
	DimensionGaps []DimensionGap  `json:"dimension_gaps,omitempty"`
	UCSNeeded     *float64        `json:"ucs_needed,omitempty"`
	Gap           *float64        `json:"gap,omitempty"`
	MarginToDeny  *float64        `json:"margin_to_deny,omitempty"`
	ClosestVeto   *DimensionPoint `json:"closest_veto_dimension,omitempty"`
	Requires      string          `json:"requires,omitempty"`
}

// DimensionGap is a dimension that scores too low and the score it needs.
type DimensionGap struct {
	Dimension string  `json:"dimension"`
	Score     float64 `json:"score"`
	Needed    float64 `json:"needed"`
}

// DimensionPoint names a dimension and its score.
type DimensionPoint struct {
	Dimension string  `json:"dimension"`
	Score     float64 `json:"score"`
}

// Reversibility is the result of the reversibility step: level is
// reversible, compensable, irreversible, or "" when not assessed.
type Reversibility struct {
	Level       string `json:"level"`
	ForcedTier3 bool   `json:"forced_tier3"`
}

// NewEvaluation converts a governor decision into the verdict object; ledger
// is the entry that recorded it (nil for none).
func NewEvaluation(d *governor.Decision, ledger *LedgerRef) Evaluation {
	return Evaluation{
		ActionID:         d.ActionID,
		AgentID:          d.AgentID,
		Decision:         d.Verdict.String(),
		UCS:              d.UCS,
		Tier:             d.Tier,
		Reasoning:        d.Reasoning,
		Vetoes:           strs(d.Vetoes),
		Modifications:    strs(d.Modifications),
		DimensionScores:  newDimensionScores(d.Scores),
		ActionToPass:     newActionToPass(d.ToPass),
		Reversibility:    Reversibility{Level: d.Reversibility.Level.String(), ForcedTier3: d.Reversibility.ForcedTier3},
		Directives:       strs(d.Directives),
		Advisory:         d.Advisory,
		EvaluationTimeUS: d.Elapsed.Microseconds(),
		Ledger:           ledger,
	}
}

func newDimensionScores(in []governor.DimensionScore) []DimensionScore {
	out := make([]DimensionScore, len(in))
	for i, s := range in {
		out[i] = DimensionScore{Dimension: s.Dimension, Score: s.Score, Weight: s.Weight, Confidence: s.Confidence, Veto: s.Veto, Reasoning: s.Reasoning}
	}
	return out
}

func newActionToPass(p governor.ActionToPass) ActionToPass {
	out := ActionToPass{
		UCSNeeded:    cloneFloat(p.UCSNeeded),
		Gap:          cloneFloat(p.Gap),
		MarginToDeny: cloneFloat(p.MarginToDeny),
		Requires:     p.Requires,
	}
	for _, g := range p.DimensionGaps {
		out.DimensionGaps = append(out.DimensionGaps, DimensionGap{Dimension: g.Dimension, Score: g.Score, Needed: g.Needed})
	}
	if p.ClosestVeto != nil {
		out.ClosestVeto = &DimensionPoint{Dimension: p.ClosestVeto.Dimension, Score: p.ClosestVeto.Score}
	}
	return out
}

func cloneFloat(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}

// strs copies s, turning nil into an empty list so it is written as [].
func strs(s []string) []string {
	out := make([]string, len(s))
	copy(out, s)
	return out
}
