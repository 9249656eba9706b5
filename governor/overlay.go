package governor

// Overlay is what the directives bound to one agent ask of the governor. The
// control plane builds a fresh set of overlays whenever directives change and
// hands it to Engine.SetOverlays; evaluations read it without a lock. An
// Overlay must not be modified after it is handed over.
type Overlay struct {
	// Quarantined forces ESCALATE before any other check.
	Quarantined bool
	// Suspended forces SUSPEND (after the quarantine check).
	Suspended bool
	// ThresholdFactor multiplies the drift thresholds (the product of the
	// active tighten factors); 0 means 1.
	ThresholdFactor float64
	// RateFactor multiplies the agent's actions_per_minute limit (throttling);
	// 0 means 1.
	RateFactor float64
	// Invariants must hold for every action (enforce directives); a failed one
	// is a veto named "invariant:<name>".
	Invariants []*Invariant
	// ReAnchors maps an anchor term to the re_anchor directive that resets it.
	// The governor resets a term once per directive id.
	ReAnchors map[string]string
	// Advisory is a reminder to deliver to the agent ("" for none).
	Advisory string
	// Directives are the ids of the directives bound to the agent.
	Directives []string
}

// Overlays maps agent ids to their overlays; an agent that is absent has no
// directives bound.
type Overlays map[string]*Overlay

func (o *Overlay) thresholdFactor() float64 {
	if o == nil || o.ThresholdFactor <= 0 {
		return 1
	}
	return o.ThresholdFactor
}

func (o *Overlay) rateFactor() float64 {
	if o == nil || o.RateFactor <= 0 {
		return 1
	}
	return o.RateFactor
}
