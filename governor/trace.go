package governor

// The input and output states recorded for each pipeline step. Each is a
// small struct so that a trace costs few allocations and reads the same in
// JSON every time.

// PrecheckState is the input of the quarantine and suspension steps.
type PrecheckState struct {
	Quarantined bool     `json:"quarantined"`
	Suspended   bool     `json:"suspended"`
	Directives  []string `json:"directives"`
}

// VerdictState is the output of a step that may decide: the verdict, or
// "continue" when it did not.
type VerdictState struct {
	Verdict string `json:"verdict"`
	Rule    string `json:"rule,omitempty"`
}

// TrustDecayInput is the input of trust_decay.
type TrustDecayInput struct {
	Trust       float64 `json:"trust"`
	IdleSeconds float64 `json:"idle_seconds"`
}

// TrustState is a trust value.
type TrustState struct {
	Trust float64 `json:"trust"`
}

// ContextInput is the input of contextual_modifier.
type ContextInput struct {
	Origin          string  `json:"origin,omitempty"`
	Mode            string  `json:"mode,omitempty"`
	Urgency         string  `json:"urgency,omitempty"`
	DelegationDepth int     `json:"delegation_depth,omitempty"`
	ChildAgents     int     `json:"child_agents,omitempty"`
	InputCategory   string  `json:"input_category,omitempty"`
	Resubmission    bool    `json:"resubmission,omitempty"`
	TrustDirection  string  `json:"trust_direction"`
	DriftSeverity   string  `json:"drift_severity"`
	Trust           float64 `json:"trust"`
}

// ContextOutput is the output of contextual_modifier.
type ContextOutput struct {
	WeightAdjustments int     `json:"weight_adjustments"`
	TrustModifier     float64 `json:"trust_modifier"`
	EffectiveTrust    float64 `json:"effective_trust"`
}

// ReversibilityInput is the input of reversibility.
type ReversibilityInput struct {
	Type     string `json:"type"`
	Method   string `json:"method,omitempty"`
	Declared string `json:"declared,omitempty"`
}

// ReversibilityOutput is the output of reversibility.
type ReversibilityOutput struct {
	Level  Reversibility `json:"level"`
	Reason string        `json:"reason"`
}

// DimensionInput is the input of dimension_eval.
type DimensionInput struct {
	Dimensions int `json:"dimensions"`
	Invariants int `json:"invariants"`
	Rules      int `json:"rules"`
}

// DimensionOutput is the output of dimension_eval.
type DimensionOutput struct {
	Vetoes           []string       `json:"vetoes"`
	FailedInvariants []string       `json:"failed_invariants,omitempty"`
	Lowest           DimensionPoint `json:"lowest"`
}

// CrossInput is the input of cross_dimensional.
type CrossInput struct {
	Patterns int     `json:"patterns"`
	Trust    float64 `json:"trust"`
}

// CrossOutput is the output of cross_dimensional.
type CrossOutput struct {
	Signals []Signal `json:"signals"`
}

// VetoInput is the input of tier1.
type VetoInput struct {
	Vetoes []string `json:"vetoes"`
}

// UCSInput is the input of ucs_compute.
type UCSInput struct {
	WeightSum float64 `json:"weight_sum"`
	Trust     float64 `json:"trust"`
	MinScore  float64 `json:"min_score"`
}

// UCSOutput is the output of ucs_compute.
type UCSOutput struct {
	Base       float64 `json:"base"`
	TrustShift float64 `json:"trust_shift"`
	FloorDrag  float64 `json:"floor_drag"`
	UCS        float64 `json:"ucs"`
}

// UCSAdjustInput is the input of ucs_adjustment.
type UCSAdjustInput struct {
	UCS             float64 `json:"ucs"`
	CriticalSignals int     `json:"critical_signals"`
}

// UCSAdjustOutput is the output of ucs_adjustment.
type UCSAdjustOutput struct {
	Adjustment float64 `json:"adjustment"`
	UCS        float64 `json:"ucs"`
}

// EscalationInput is the input of reversibility_escalation.
type EscalationInput struct {
	Level Reversibility `json:"level"`
}

// EscalationOutput is the output of reversibility_escalation.
type EscalationOutput struct {
	ForcedTier3 bool `json:"forced_tier3"`
}

// ThresholdInput is the input of tier2.
type ThresholdInput struct {
	UCS            float64 `json:"ucs"`
	AllowThreshold float64 `json:"allow_threshold"`
	DenyThreshold  float64 `json:"deny_threshold"`
}

// DeliberationInput is the input of tier3.
type DeliberationInput struct {
	UCS           float64       `json:"ucs"`
	Trust         float64       `json:"trust"`
	Reversibility Reversibility `json:"reversibility"`
	Deliberators  int           `json:"deliberators"`
}
