package governor

import "time"

// Decision is the governor's answer for one action: the verdict and everything
// needed to explain and reconstruct it. A Decision is never modified after
// Evaluate returns it.
type Decision struct {
	ActionID  string    `json:"action_id"`
	AgentID   string    `json:"agent_id"`
	Timestamp time.Time `json:"timestamp"`
	Action    Action    `json:"action"`

	Verdict Verdict `json:"decision"`
	// UCS is the Unified Confidence Score (0 when vetoed or not computed).
	UCS float64 `json:"ucs"`
	// Tier is the tier that decided: 0 a pre-check (quarantine, suspension),
	// 1 the veto gate, 2 the thresholds, 3 deliberation.
	Tier      int      `json:"tier"`
	Reasoning string   `json:"reasoning"`
	Vetoes    []string `json:"vetoes"`
	// Modifications are what MODIFY asks for (reduce_scope,
	// require_confirmation).
	Modifications []string `json:"modifications,omitempty"`

	Pipeline         []Step                  `json:"pipeline"`
	Scores           []DimensionScore        `json:"dimension_scores"`
	State            BehavioralState         `json:"behavioral_state"`
	Contract         *Contract               `json:"contract_snapshot"`
	Semantic         SemanticContext         `json:"semantic_context"`
	CausalLinks      []CausalLink            `json:"causal_links"`
	ToPass           ActionToPass            `json:"action_to_pass"`
	Reversibility    ReversibilityAssessment `json:"reversibility"`
	CrossDimensional CrossDimensional        `json:"cross_dimensional"`
	Contextual       ContextualModification  `json:"contextual_modification"`
	// Directives are the ids of the directives bound to the agent when it was
	// evaluated.
	Directives []string `json:"directives"`
	// Advisory is a broadcast reminder to deliver to the agent ("" for none).
	Advisory string `json:"advisory,omitempty"`
	// Elapsed is how long the evaluation took.
	Elapsed time.Duration `json:"-"`
}

// Step names, in pipeline order.
const (
	StepQuarantine              = "quarantine"
	StepSuspension              = "suspension"
	StepTrustDecay              = "trust_decay"
	StepContextualModifier      = "contextual_modifier"
	StepReversibility           = "reversibility"
	StepDimensionEval           = "dimension_eval"
	StepCrossDimensional        = "cross_dimensional"
	StepTier1                   = "tier1"
	StepUCSCompute              = "ucs_compute"
	StepUCSAdjustment           = "ucs_adjustment"
	StepReversibilityEscalation = "reversibility_escalation"
	StepTier2                   = "tier2"
	StepTier3                   = "tier3"
)

// Step is one decision point of the pipeline. Input and Output are small
// step-specific structs (see trace.go) that marshal to JSON objects.
type Step struct {
	Name     string        `json:"step"`
	Input    any           `json:"input_state"`
	Output   any           `json:"output_state"`
	Decided  bool          `json:"decided_verdict"`
	Duration time.Duration `json:"-"`
}

// DurationMicros is the step's duration in whole microseconds.
func (s Step) DurationMicros() int64 { return s.Duration.Microseconds() }

// DimensionScore is one dimension's assessment. Score 0 is maximum concern, 1
// none. Weight is the weight used (after contextual adjustment).
type DimensionScore struct {
	Dimension  string  `json:"dimension"`
	Score      float64 `json:"score"`
	Weight     float64 `json:"weight"`
	Confidence float64 `json:"confidence"`
	Veto       bool    `json:"veto"`
	Reasoning  string  `json:"reasoning"`
}

// DriftScores holds drift per distribution and overall, each in [0, 1].
type DriftScores struct {
	Action   float64 `json:"action"`
	Target   float64 `json:"target"`
	Temporal float64 `json:"temporal"`
	Outcome  float64 `json:"outcome"`
	Semantic float64 `json:"semantic"`
	Overall  float64 `json:"overall"`
}

// BehavioralState is the agent's state as the decision saw it, after the
// decision's own updates.
type BehavioralState struct {
	FingerprintConfidence float64     `json:"fingerprint_confidence"`
	Observations          int         `json:"observations"`
	Drift                 DriftScores `json:"drift"`
	// DriftConfidence is the confidence of the last drift recomputation.
	DriftConfidence float64 `json:"drift_confidence"`
	// Severity: none, low, moderate, high or critical.
	Severity       string  `json:"severity"`
	Trust          float64 `json:"trust_score"`
	TrustDirection string  `json:"trust_direction"`
	TrustVelocity  float64 `json:"trust_velocity"`
}

// SemanticContext records the semantic grounding of the action.
type SemanticContext struct {
	// InstructionContext is the instruction, cut to 512 characters.
	InstructionContext string             `json:"instruction_context"`
	MatchedAnchorTerms []string           `json:"matched_anchor_terms"`
	PerTermDrift       map[string]float64 `json:"per_term_drift"`
	AggregateDrift     float64            `json:"aggregate_semantic_drift"`
}

// CausalLink ties a decision to an earlier one of the same agent that
// influenced it. Sequence is the ledger sequence of that decision; the governor
// knows only its action id, and the ledger fills the sequence in.
type CausalLink struct {
	ActionID string `json:"action_id"`
	Sequence int64  `json:"sequence"`
	// Kind: "predecessor" (the previous decision, through the trust it left),
	// "resubmission" (an identical action that was denied).
	Kind        string  `json:"kind"`
	Influence   float64 `json:"influence"`
	TrustBefore float64 `json:"trust_before"`
	TrustAfter  float64 `json:"trust_after"`
}

// ActionToPass says what would have to change for another verdict. Which
// fields are set depends on the verdict:
//   - DENY: DimensionGaps, UCSNeeded, Gap.
//   - ALLOW: MarginToDeny, ClosestVeto.
//   - ESCALATE, MODIFY: UCSNeeded, Gap and Requires (what a human must give).
//   - SUSPEND: Requires.
type ActionToPass struct {
	DimensionGaps []DimensionGap  `json:"dimension_gaps,omitempty"`
	UCSNeeded     *float64        `json:"ucs_needed,omitempty"`
	Gap           *float64        `json:"gap,omitempty"`
	MarginToDeny  *float64        `json:"margin_to_deny,omitempty"`
	ClosestVeto   *DimensionPoint `json:"closest_veto_dimension,omitempty"`
	Requires      string          `json:"requires,omitempty"`
}

// DimensionGap is a dimension that scores too low, and the score it needs.
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

// ReversibilityAssessment is the result of the reversibility step.
type ReversibilityAssessment struct {
	Level       Reversibility `json:"level"`
	ForcedTier3 bool          `json:"forced_tier3"`
}

// CrossDimensional is the result of the cross-dimensional step.
type CrossDimensional struct {
	Count         int      `json:"count"`
	UCSAdjustment float64  `json:"ucs_adjustment"`
	Signals       []Signal `json:"signals"`
}

// Signal is one cross-dimensional pattern that fired.
type Signal struct {
	Pattern  string `json:"pattern"`
	Severity string `json:"severity"` // warning, alert or critical
}

// ContextualModification is what the context changed for this evaluation.
type ContextualModification struct {
	WeightAdjustments []WeightAdjustment `json:"weight_adjustments"`
	TrustModifiers    []TrustModifier    `json:"trust_modifiers"`
}

// WeightAdjustment is one contextual change of a dimension's weight.
type WeightAdjustment struct {
	Dimension string  `json:"dimension"`
	Delta     float64 `json:"delta"`
	Source    string  `json:"source"`
}

// TrustModifier is one contextual change of the trust used in this evaluation.
type TrustModifier struct {
	Delta  float64 `json:"delta"`
	Source string  `json:"source"`
}
