package governor

import (
	"math"
	"strconv"
	"strings"
)

// Dimension names, in evaluation order.
const (
	DimScopeCompliance       = "scope_compliance"
	DimAuthorityVerification = "authority_verification"
	DimResourceBoundaries    = "resource_boundaries"
	DimBehavioralConsistency = "behavioral_consistency"
	DimCascadingImpact       = "cascading_impact"
	DimStakeholderImpact     = "stakeholder_impact"
	DimIncidentDetection     = "incident_detection"
	DimIsolationIntegrity    = "isolation_integrity"
	DimTemporalCompliance    = "temporal_compliance"
	DimPrecedentAlignment    = "precedent_alignment"
	DimTransparency          = "transparency"
	DimHumanOverride         = "human_override"
	DimEthicalAlignment      = "ethical_alignment"
)

// Indexes of the dimensions in Decision.Scores.
const (
	dimScope = iota
	dimAuthority
	dimResource
	dimBehavioral
	dimCascading
	dimStakeholder
	dimIncident
	dimIsolation
	dimTemporal
	dimPrecedent
	dimTransparency
	dimHumanOverride
	dimEthical
	numDims
)

type dimensionSpec struct {
	name    string
	weight  float64 // default weight
	canVeto bool
}

// dimensionOrder is GOVERNOR.md section 2's table: 13 dimensions, default
// weights summing to 16.7.
var dimensionOrder = [numDims]dimensionSpec{
	{DimScopeCompliance, 1.5, true},
	{DimAuthorityVerification, 1.5, true},
	{DimResourceBoundaries, 1.2, true},
	{DimBehavioralConsistency, 1.0, false},
	{DimCascadingImpact, 1.3, false},
	{DimStakeholderImpact, 1.2, false},
	{DimIncidentDetection, 1.5, true},
	{DimIsolationIntegrity, 1.4, true},
	{DimTemporalCompliance, 0.8, true},
	{DimPrecedentAlignment, 0.7, false},
	{DimTransparency, 0.6, false},
	{DimHumanOverride, 2.0, true},
	{DimEthicalAlignment, 2.0, true},
}

// Dimensions returns the names of the 13 dimensions in evaluation order.
func Dimensions() []string {
	out := make([]string, numDims)
	for i, d := range dimensionOrder {
		out[i] = d.name
	}
	return out
}

var (
	cascadeHighWords   = []string{"delete", "deploy", "publish", "broadcast", "transfer"}
	cascadeMediumWords = []string{"update", "modify", "write", "send", "create"}
	stakeholderWords   = []string{"customer", "user", "external", "public", "client"}
	readTypeWords      = []string{"read", "get", "list", "query", "search", "fetch"}
)

func (ev *evaluation) score(i int, score float64, veto bool, reasoning string) {
	s := &ev.d.Scores[i]
	s.Dimension = dimensionOrder[i].name
	s.Score = score
	s.Weight = ev.weights[i]
	s.Confidence = 1
	s.Veto = veto
	s.Reasoning = reasoning
}

// evalDimensions scores all 13 dimensions and checks the overlay's
// invariants; it returns the names of the vetoes.
func (ev *evaluation) evalDimensions() {
	ev.d.Scores = ev.blk.scores[:]
	ev.scopeCompliance()
	ev.authorityVerification()
	ev.resourceBoundaries()
	ev.behavioralConsistency()
	ev.cascadingImpact()
	ev.stakeholderImpact()
	ev.incidentDetection()
	ev.isolationIntegrity()
	ev.temporalCompliance()
	ev.precedentAlignment()
	ev.transparency()
	ev.humanOverride()
	ev.ethicalAlignment()
	for i := range ev.d.Scores {
		if ev.d.Scores[i].Veto {
			ev.vetoes = append(ev.vetoes, ev.d.Scores[i].Dimension)
		}
	}
	if ev.ov != nil {
		for _, inv := range ev.ov.Invariants {
			if ok, why := inv.holds(ev.celInput()); !ok {
				ev.vetoes = append(ev.vetoes, "invariant:"+inv.Name)
				ev.failedInvariants = append(ev.failedInvariants, invariantFailure(inv, why))
			}
		}
	}
}

func invariantFailure(inv *Invariant, why string) string {
	msg := inv.Message
	if msg == "" {
		msg = "invariant " + strconv.Quote(inv.Expr) + " does not hold"
	}
	if why != "" {
		msg += " (" + why + ")"
	}
	return inv.Name + ": " + msg
}

func (ev *evaluation) scopeCompliance() {
	cc, t := ev.cc, ev.act.Type
	switch {
	case len(cc.spec.Scope) == 0:
		ev.score(dimScope, 0.5, false, "no scope configured")
	case cc.scopeAll || cc.scope[t]:
		ev.score(dimScope, 1, false, "action type in scope")
	default:
		ev.score(dimScope, 0, true, "action type "+strconv.Quote(t)+" is not in scope")
	}
}

func (ev *evaluation) authorityVerification() {
	if len(ev.cc.authority) == 0 {
		ev.score(dimAuthority, 0.7, false, "no authority expressions configured")
		return
	}
	for _, inv := range ev.cc.authority {
		if ok, why := inv.holds(ev.celInput()); !ok {
			r := "authority expression " + strconv.Quote(inv.Expr) + " is false"
			if why != "" {
				r += " (" + why + ")"
			}
			ev.score(dimAuthority, 0, true, r)
			return
		}
	}
	ev.score(dimAuthority, 1, false, "all authority expressions hold")
}

func (ev *evaluation) resourceBoundaries() {
	lim := ev.cc.spec.Limits
	var rateRatio, concRatio float64
	if lim.ActionsPerMinute > 0 {
		limit := max(float64(lim.ActionsPerMinute)*ev.ov.rateFactor(), 1)
		count := float64(ev.st.rateCount(ev.now))
		if count >= limit {
			ev.score(dimResource, 0, true, "rate limit reached: "+ftoa(count)+" actions in the last minute, limit "+ftoa(limit))
			return
		}
		rateRatio = count / limit
	}
	if lim.MaxConcurrent > 0 {
		inflight := float64(ev.inflight)
		if inflight >= float64(lim.MaxConcurrent) {
			ev.score(dimResource, 0, true, "concurrency limit reached: "+ftoa(inflight)+" calls in flight, limit "+strconv.Itoa(lim.MaxConcurrent))
			return
		}
		concRatio = inflight / float64(lim.MaxConcurrent)
	}
	if lim.MaxCostPerAction > 0 {
		if cost, ok := number(ev.act.Parameters["cost"]); ok && cost > lim.MaxCostPerAction {
			ev.score(dimResource, 0, true, "cost "+ftoa(cost)+" exceeds the maximum "+ftoa(lim.MaxCostPerAction)+" per action")
			return
		}
	}
	if lim == (Limits{}) {
		ev.score(dimResource, 1, false, "no resource limits configured")
		return
	}
	ev.score(dimResource, 1-0.5*max(rateRatio, concRatio), false, "within limits: rate at "+pct(rateRatio)+", concurrency at "+pct(concRatio))
}

func (ev *evaluation) behavioralConsistency() {
	st, t := ev.st, ev.act.Type
	var s float64
	var r string
	switch {
	case st.Observations == 0:
		s, r = 0.7, "first action of the agent"
	case st.Observations < 10:
		if st.Actions[t] > 0 || ev.priorShare(t) > 0 {
			s, r = 1, "known action type"
		} else {
			s, r = 0.5, "novel action type"
		}
	default:
		switch share := ev.actionShare(t); {
		case share >= 0.05:
			s, r = 1, "action type is "+pct(share)+" of the fingerprint"
		case share > 0:
			s, r = 0.7, "rare action type ("+pct(share)+" of the fingerprint)"
		default:
			s, r = 0.4, "action type absent from the fingerprint"
		}
	}
	if st.DriftConfidence > 0.3 && st.Drift.Overall >= 0.15 {
		s *= max(1-0.6*st.Drift.Overall, 0.2)
		r += "; reduced for drift " + ftoa(st.Drift.Overall)
	}
	ev.score(dimBehavioral, s, false, r)
}

// actionShare is the type's share of the blended whole-history fingerprint.
func (ev *evaluation) actionShare(t string) float64 {
	n := float64(ev.st.Observations)
	w := ev.cfg.PriorWeight
	if ev.cc.prior == nil {
		w = 0
	}
	if w+n == 0 {
		return 0
	}
	return (ev.priorShare(t)*w + ev.st.Actions[t]) / (w + n)
}

func (ev *evaluation) priorShare(t string) float64 {
	if ev.cc.prior == nil {
		return 0
	}
	for _, s := range ev.cc.prior.Actions {
		if s.Key == t {
			return s.Share
		}
	}
	return 0
}

func (ev *evaluation) cascadingImpact() {
	t := strings.ToLower(ev.act.Type)
	var s float64
	var r string
	if w := containsAny(t, cascadeHighWords); w != "" {
		s, r = 0.3, "type contains "+strconv.Quote(w)+": wide downstream impact"
	} else if w := containsAny(t, cascadeMediumWords); w != "" {
		s, r = 0.6, "type contains "+strconv.Quote(w)+": moderate downstream impact"
	} else {
		s, r = 0.9, "limited downstream impact"
	}
	if ev.rev == Irreversible && s > 0.3 {
		s, r = 0.3, r+"; capped at 0.3: irreversible"
	}
	ev.score(dimCascading, s, false, r)
}

func (ev *evaluation) stakeholderImpact() {
	target := ev.act.Target
	for _, g := range ev.cc.sensitive {
		if MatchGlob(g, target) {
			ev.score(dimStakeholder, 0.2, false, "target matches sensitive pattern "+strconv.Quote(g))
			return
		}
	}
	if w := containsAny(strings.ToLower(target), stakeholderWords); w != "" {
		ev.score(dimStakeholder, 0.4, false, "target concerns "+strconv.Quote(w)+" stakeholders")
		return
	}
	ev.score(dimStakeholder, 0.9, false, "no external stakeholders affected")
}

func (ev *evaluation) incidentDetection() {
	st, t := ev.st, ev.act.Type
	s, r := 1.0, "no incident pattern"
	if st.Recent.len() >= 5 {
		repeated := true
		for i := range 5 {
			if st.Recent.last(i) != t {
				repeated = false
				break
			}
		}
		if repeated {
			s, r = 0.2, "the last 5 actions were all "+strconv.Quote(t)
		}
	}
	if st.DriftConfidence > 0.5 {
		switch o := st.Drift.Overall; {
		case o >= 0.6 && 0.1 < s:
			s, r = 0.1, "drift "+ftoa(o)+" at or above 0.6"
		case o >= 0.4 && 0.3 < s:
			s, r = 0.3, "drift "+ftoa(o)+" at or above 0.4"
		}
	}
	ev.score(dimIncident, s, s <= 0.1, r)
}

func (ev *evaluation) isolationIntegrity() {
	if len(ev.cc.boundaries) == 0 {
		ev.score(dimIsolation, 0.6, false, "no boundaries configured")
		return
	}
	for _, g := range ev.cc.boundaries {
		if MatchGlob(g, ev.act.Target) {
			ev.score(dimIsolation, 1, false, "target within boundary "+strconv.Quote(g))
			return
		}
	}
	ev.score(dimIsolation, 0, true, "target "+strconv.Quote(ev.act.Target)+" is outside every boundary")
}

func (ev *evaluation) temporalCompliance() {
	w, ok := ev.cc.windows[ev.act.Type]
	if !ok {
		ev.score(dimTemporal, 1, false, "no time window for this type")
		return
	}
	if !w.allows(ev.now) {
		ev.score(dimTemporal, 0, true, "outside the time window "+strconv.Itoa(w.StartHour)+":00-"+strconv.Itoa(w.EndHour)+":00 "+w.loc.String())
		return
	}
	if w.MinIntervalSeconds > 0 {
		if last, ok := ev.st.LastOfType[ev.act.Type]; ok {
			if since := ev.now.Sub(last).Seconds(); since < w.MinIntervalSeconds {
				ev.score(dimTemporal, 0.1, true, "only "+ftoa(since)+" s since the last such action; minimum "+ftoa(w.MinIntervalSeconds)+" s")
				return
			}
		}
	}
	ev.score(dimTemporal, 1, false, "within the time window")
}

func (ev *evaluation) precedentAlignment() {
	st := ev.st
	ts := st.TypeStats[ev.act.Type]
	switch {
	case st.Decisions == 0:
		ev.score(dimPrecedent, 0.8, false, "no decision history")
	case ts == nil || ts.Total == 0:
		ev.score(dimPrecedent, 0.7, false, "no precedent for this action type")
	case float64(ts.Denied) > 0.5*float64(ts.Total):
		ev.score(dimPrecedent, 0.3, false, strconv.Itoa(ts.Denied)+" of "+strconv.Itoa(ts.Total)+" such actions were denied")
	default:
		ev.score(dimPrecedent, 0.9, false, "consistent with "+strconv.Itoa(ts.Total)+" precedents")
	}
}

func (ev *evaluation) transparency() {
	s := 1.0
	var missing []string
	if ev.act.Type == "" {
		s -= 0.3
		missing = append(missing, "type")
	}
	if ev.act.Target == "" {
		s -= 0.2
		missing = append(missing, "target")
	}
	if ev.d.AgentID == "" {
		s -= 0.2
		missing = append(missing, "agent")
	}
	if len(ev.act.Parameters) == 0 && containsAny(strings.ToLower(ev.act.Type), readTypeWords) == "" {
		s -= 0.1
		missing = append(missing, "parameters")
	}
	if len(missing) == 0 {
		ev.score(dimTransparency, 1, false, "fully described action")
		return
	}
	ev.score(dimTransparency, max(s, 0), false, "missing "+strings.Join(missing, ", "))
}

func (ev *evaluation) humanOverride() {
	if len(ev.st.Approvals) > 0 {
		if exp, ok := ev.st.Approvals[ev.actionDigest()]; ok && ev.now.Before(exp) {
			ev.approvalUsed = true
			ev.score(dimHumanOverride, 1, false, "approved by a human for this exact action")
			return
		}
	}
	if ev.cc.humanOverride[ev.act.Type] {
		ev.score(dimHumanOverride, 0, true, "action type "+strconv.Quote(ev.act.Type)+" always needs a human")
		return
	}
	if ev.effTrust < ev.cfg.MandatoryReviewTrust {
		ev.score(dimHumanOverride, 0, true, "mandatory human review: trust "+ftoa(ev.effTrust)+" below "+ftoa(ev.cfg.MandatoryReviewTrust))
		return
	}
	ev.score(dimHumanOverride, 1, false, "no human review required")
}

func (ev *evaluation) ethicalAlignment() {
	rs := ev.rules
	if len(rs.compiled) == 0 {
		ev.score(dimEthical, 0.8, false, "no constitutional rules configured")
		return
	}
	for _, inv := range rs.compiled {
		if ok, why := inv.holds(ev.celInput()); !ok {
			msg := inv.Message
			if msg == "" {
				msg = "rule " + strconv.Quote(inv.Name) + " does not hold"
			}
			if why != "" {
				msg += " (" + why + ")"
			}
			ev.score(dimEthical, 0, true, inv.Name+": "+msg)
			return
		}
	}
	ev.score(dimEthical, 1, false, "all constitutional rules hold")
}

// number reads a JSON-like numeric value.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case interface{ Float64() (float64, error) }:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// ftoa formats a number with up to 3 decimals, no trailing zeros.
func ftoa(f float64) string { return strconv.FormatFloat(round3(f), 'f', -1, 64) }

func pct(f float64) string { return strconv.FormatFloat(round3(f*100), 'f', -1, 64) + "%" }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
