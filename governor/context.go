package governor

// Contextual modifier (GOVERNOR.md section 6): per-evaluation weight deltas
// and a trust modifier derived from the request's context and the agent's own
// history. Nothing here changes stored state.

// Sources of contextual adjustments, as recorded in the decision.
const (
	ctxSituational = "situational"
	ctxRelational  = "relational"
	ctxHistorical  = "historical"
	ctxInput       = "input"
	ctxMeta        = "meta"
)

func (ev *evaluation) adjustWeight(dim int, delta float64, source string) {
	ev.weightDelta[dim] += delta
	ev.d.Contextual.WeightAdjustments = append(ev.d.Contextual.WeightAdjustments,
		WeightAdjustment{Dimension: dimensionOrder[dim].name, Delta: delta, Source: source})
}

func (ev *evaluation) adjustAll(delta float64, source string) {
	for i := range numDims {
		ev.adjustWeight(i, delta, source)
	}
}

func (ev *evaluation) modifyTrust(delta float64, source string) {
	ev.trustDelta += delta
	ev.d.Contextual.TrustModifiers = append(ev.d.Contextual.TrustModifiers, TrustModifier{Delta: delta, Source: source})
}

// contextualModifier applies the rules of section 6 and computes the
// effective weights and trust of this evaluation.
func (ev *evaluation) contextualModifier() {
	c := &ev.req.Context
	switch c.Origin {
	case "agent_initiated":
		ev.adjustWeight(dimHumanOverride, 0.3, ctxSituational+": origin agent_initiated")
	case "escalation_received":
		ev.adjustWeight(dimHumanOverride, -0.1, ctxSituational+": origin escalation_received")
		ev.adjustWeight(dimAuthority, 0.2, ctxSituational+": origin escalation_received")
	}
	if c.Mode == "incident_response" {
		ev.adjustWeight(dimIncident, 0.2, ctxSituational+": mode incident_response")
		ev.adjustWeight(dimIsolation, 0.2, ctxSituational+": mode incident_response")
		ev.adjustWeight(dimTemporal, -0.1, ctxSituational+": mode incident_response")
	}
	if c.Urgency == "critical" {
		ev.adjustAll(0.1, ctxSituational+": urgency critical")
	}
	if c.DelegationDepth > 3 {
		ev.adjustWeight(dimAuthority, 0.2, ctxRelational+": delegation depth above 3")
	}
	if c.ChildAgents > 0 {
		ev.adjustWeight(dimCascading, 0.1, ctxRelational+": has child agents")
	}
	switch ev.direction {
	case "falling":
		ev.adjustAll(0.1, ctxHistorical+": trust falling")
	case "volatile":
		ev.adjustWeight(dimBehavioral, 0.2, ctxHistorical+": trust volatile")
	}
	if s := ev.severity; s == SeverityHigh || s == SeverityCritical {
		ev.adjustWeight(dimBehavioral, 0.2, ctxHistorical+": drift severity "+s)
		ev.modifyTrust(-0.05, ctxHistorical+": drift severity "+s)
	}
	switch c.InputCategory {
	case "adversarial":
		ev.adjustWeight(dimIncident, 0.3, ctxInput+": adversarial input")
		ev.adjustWeight(dimIsolation, 0.2, ctxInput+": adversarial input")
	case "ambiguous":
		ev.adjustWeight(dimTransparency, 0.1, ctxInput+": ambiguous input")
	}
	if ev.resubmittedOf != "" {
		ev.modifyTrust(-0.05, ctxMeta+": resubmission of a denied identical action")
	}

	for i := range numDims {
		ev.weights[i] = min(max(ev.baseWeights[i]+ev.weightDelta[i], 0.1), 3.0)
	}
	ev.trustDelta = min(max(ev.trustDelta, -0.1), 0.1)
	ev.effTrust = min(max(ev.trust+ev.trustDelta, 0), 1)
}
