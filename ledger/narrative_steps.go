package ledger

import (
	"fmt"
	"math"
	"strings"

	"github.com/vigilhq/vigil/governor"
)

// One paragraph per pipeline step, from the step's recorded input and
// output states.

func (n *narrator) stepQuarantine(in, out narrState) string {
	s := "Before anything else, Vigil checks whether the agent is quarantined; a quarantined agent's actions all go to a person, and nothing bypasses this."
	if q, ok := in.boolean("quarantined"); ok && !q {
		s += " The agent was not quarantined."
	} else {
		s += " The agent was quarantined" + narrDirectives(in.strings("directives")) + "."
	}
	return s + narrVerdictSentence(out.str("verdict"))
}

func (n *narrator) stepSuspension(in, out narrState) string {
	s := "Vigil checks whether the agent is suspended, by an operator or because its credentials were revoked; a suspended agent may not act at all."
	if q, ok := in.boolean("suspended"); ok && !q {
		s += " The agent was not suspended."
	} else {
		s += " The agent was suspended" + narrDirectives(in.strings("directives")) + "."
	}
	return s + narrVerdictSentence(out.str("verdict"))
}

func narrDirectives(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " (directives in force: " + narrJoinClean(ids, 80) + ")"
}

// narrVerdictSentence narrates the verdict a deciding step recorded.
func narrVerdictSentence(v string) string {
	switch v {
	case "":
		return " The step's verdict was not recorded."
	case "continue":
		return " The step did not decide, and the evaluation continued."
	case "ALLOW":
		return " The action was therefore allowed (ALLOW)."
	case "DENY":
		return " The action was therefore denied (DENY)."
	case "ESCALATE":
		return " The action was therefore held for human review (ESCALATE)."
	case "MODIFY":
		return " The action was therefore allowed only with modifications (MODIFY)."
	case "SUSPEND":
		return " The action was therefore refused (SUSPEND)."
	}
	return " The step recorded the verdict " + narrQuote(v, 40) + "."
}

func (n *narrator) stepTrustDecay(in, out narrState) string {
	s := "An agent's trust score (from 0 to 1) slowly returns toward the neutral value 0.5 while the agent is idle."
	if idle, ok := in.num("idle_seconds"); ok && idle == 0 {
		s += " No idle time was recorded: this is the agent's first evaluation, or it was evaluated again at once."
	} else if ok {
		s += " Since its previous evaluation the agent had been idle for " + narrDuration(idle) + "."
	} else {
		s += " The idle time was not recorded."
	}
	before, okB := in.num("trust")
	after, okA := out.num("trust")
	switch {
	case okB && okA && narrNum(before) == narrNum(after):
		s += " Its trust was " + narrNum(before) + " and decay left it unchanged."
	case okB && okA:
		s += " Decay moved its trust from " + narrNum(before) + " to " + narrNum(after) + "."
	case okA:
		s += " Its trust after decay was " + narrNum(after) + "."
	case okB:
		s += " Its trust before decay was " + narrNum(before) + "; the result was not recorded."
	default:
		s += " The trust values were not recorded."
	}
	return s
}

func (n *narrator) stepContext(in, out narrState) string {
	s := "This step adjusts, for this evaluation only, how much each dimension counts and how far the agent is trusted, according to the circumstances of the action."
	var circ []string
	if v := in.str("origin"); v != "" {
		circ = append(circ, "origin "+narrHuman(v))
	}
	if v := in.str("mode"); v != "" {
		circ = append(circ, "mode "+narrHuman(v))
	}
	if v := in.str("urgency"); v != "" {
		circ = append(circ, "urgency "+narrHuman(v))
	}
	if v, ok := in.num("delegation_depth"); ok && v != 0 {
		circ = append(circ, "delegation depth "+narrNum(v))
	}
	if v, ok := in.num("child_agents"); ok && v != 0 {
		circ = append(circ, narrNum(v)+" child agents")
	}
	if v := in.str("input_category"); v != "" {
		circ = append(circ, "input category "+narrHuman(v))
	}
	if v, ok := in.boolean("resubmission"); ok && v {
		circ = append(circ, "a resubmission of an identical denied action")
	}
	if v := in.str("trust_direction"); v != "" {
		circ = append(circ, "trust trend "+narrHuman(v))
	}
	if v := in.str("drift_severity"); v != "" {
		circ = append(circ, "drift severity "+narrHuman(v))
	}
	if len(circ) > 0 {
		s += " The recorded circumstances were: " + strings.Join(circ, "; ") + "."
	} else {
		s += " No circumstances were recorded."
	}
	cm := n.e.ContextualModification
	if len(cm.WeightAdjustments) == 0 {
		s += " No dimension weight was adjusted."
	} else {
		s += " Weight adjustments: " + narrWeightAdjustments(cm) + "."
	}
	if len(cm.TrustModifiers) == 0 {
		s += " No trust modifier applied."
	} else {
		parts := make([]string, len(cm.TrustModifiers))
		for i, m := range cm.TrustModifiers {
			parts[i] = narrSigned(m.Delta) + " (" + narrOr(narrClean(m.Source, 120), "no source recorded") + ")"
		}
		s += " Trust modifiers: " + strings.Join(parts, "; ") + "."
	}
	trust, okT := in.num("trust")
	eff, okE := out.num("effective_trust")
	mod, okM := out.num("trust_modifier")
	switch {
	case okE && okT && narrNum(eff) == narrNum(trust):
		s += " The trust used for this evaluation stayed " + narrNum(eff) + "."
	case okE && okM:
		s += " With a total modifier of " + narrSigned(mod) + " (limited to ±0.1), the trust used for this evaluation was " + narrNum(eff) + "; the agent's stored trust was not changed."
	case okE:
		s += " The trust used for this evaluation was " + narrNum(eff) + "; the agent's stored trust was not changed."
	default:
		s += " The effective trust was not recorded."
	}
	return s
}

// narrWeightAdjustments groups adjustments of one source and delta, in the
// recorded order ("+0.1 to every dimension (situational: urgency critical)").
func narrWeightAdjustments(cm governor.ContextualModification) string {
	type group struct {
		delta  float64
		source string
		dims   []string
	}
	var groups []*group
	index := map[string]*group{}
	for _, w := range cm.WeightAdjustments {
		key := narrSigned(w.Delta) + "\x00" + w.Source
		g := index[key]
		if g == nil {
			g = &group{delta: w.Delta, source: w.Source}
			index[key] = g
			groups = append(groups, g)
		}
		g.dims = append(g.dims, w.Dimension)
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		distinct := map[string]bool{}
		for _, d := range g.dims {
			distinct[d] = true
		}
		target := ""
		if len(distinct) >= len(narrDimensions) && len(g.dims) == len(distinct) {
			target = "every dimension"
		} else {
			names := make([]string, len(g.dims))
			for j, d := range g.dims {
				names[j] = narrDim(d)
			}
			target = narrJoin(names, "and")
		}
		parts[i] = narrSigned(g.delta) + " to " + target + " (" + narrOr(narrClean(g.source, 120), "no source recorded") + ")"
	}
	return strings.Join(parts, "; ")
}

func (n *narrator) stepReversibility(in, out narrState) string {
	s := "This step judges whether the action's effects could be undone."
	level := out.str("level")
	if level == "" {
		level = n.e.Reversibility.Level
	}
	if level == "" {
		s += " No level was recorded."
	} else {
		s += " The action was rated " + narrClean(level, 40)
		if g, ok := narrLevels[level]; ok {
			s += " (" + g + ")"
		}
		reason := out.str("reason")
		switch {
		case reason == "":
			s += "; no reason was recorded."
		case strings.HasPrefix(reason, "type contains "):
			s += " because the action type contains the word " + narrClean(strings.TrimPrefix(reason, "type contains "), 60) + "."
		case reason == "no rule matched the type; assumed compensable":
			s += " because its type matched none of the known patterns, so the cautious middle level was assumed."
		case reason == "declared by the route rule":
			s += " because the route rule for this call declares it so."
		case strings.HasPrefix(reason, "method "):
			s += " because the HTTP method was " + narrClean(strings.TrimPrefix(reason, "method "), 20) + "."
		default:
			s += "; recorded reason: " + narrClean(reason, 200) + "."
		}
	}
	return s
}

func (n *narrator) stepDimensions(in, out narrState) string {
	var b strings.Builder
	b.WriteString("The action was scored on the governance dimensions, each from 0 (maximum concern) to 1 (no concern); a weight says how much a dimension counts, and some dimensions can veto the action outright.")
	rules, okR := in.num("rules")
	inv, okI := in.num("invariants")
	if okR || okI {
		b.WriteString(" Vigil also checked " + narrCount(int(rules), "constitutional rule", "constitutional rules") + " and " +
			narrCount(int(inv), "invariant", "invariants") + " set by directives.")
	}
	scores := n.e.DimensionScores
	if len(scores) == 0 {
		b.WriteString(" No dimension scores were recorded. ")
	} else {
		fmt.Fprintf(&b, " The %s:", narrCount(len(scores), "score was", "scores were"))
		for i, d := range scores {
			fmt.Fprintf(&b, "\n  %d. %s", i+1, narrCapital(narrDim(d.Dimension)))
			if g, ok := narrDimensions[d.Dimension]; ok {
				b.WriteString(" (" + g[1] + ")")
			}
			b.WriteString(": score " + narrNum(d.Score) + ", weight " + narrNum(d.Weight))
			if d.Confidence != 1 {
				b.WriteString(", confidence " + narrNum(d.Confidence))
			}
			if d.Veto {
				b.WriteString(", VETO")
			}
			if r := narrClean(d.Reasoning, 300); r != "" {
				b.WriteString(" — " + r)
			}
			b.WriteString(".")
		}
		b.WriteString("\n")
	}
	vetoes := out.strings("vetoes")
	if vetoes == nil {
		vetoes = n.e.Verdict.Vetoes
	}
	if len(vetoes) == 0 {
		b.WriteString("No dimension vetoed the action.")
	} else {
		names := make([]string, len(vetoes))
		for i, v := range vetoes {
			names[i] = narrVeto(v)
		}
		b.WriteString(narrCapital(narrJoin(names, "and")) + " vetoed the action.")
	}
	if failed := out.strings("failed_invariants"); len(failed) > 0 {
		b.WriteString(" Failed invariants: " + narrJoinClean(failed, 120) + ".")
	} else if okI && inv > 0 {
		b.WriteString(" Every invariant held.")
	}
	if low := out.obj("lowest"); low != nil {
		if d := low.str("dimension"); d != "" {
			if sc, ok := low.num("score"); ok {
				b.WriteString(" The lowest score was " + narrDim(d) + " at " + narrNum(sc) + ".")
			}
		}
	}
	return b.String()
}

func (n *narrator) stepCross(in, out narrState) string {
	s := "This step looks for known combinations of scores that are more worrying together than apart"
	if p, ok := in.num("patterns"); ok {
		s += " (" + narrCount(int(p), "pattern", "patterns") + " are checked)"
	}
	s += "."
	sigs := out.list("signals")
	if sigs == nil && out.get("signals") == nil {
		for _, x := range n.e.CrossDimensional.Signals {
			sigs = append(sigs, narrState{"pattern": x.Pattern, "severity": x.Severity})
		}
	}
	if len(sigs) == 0 {
		return s + " None fired."
	}
	parts := make([]string, len(sigs))
	critical := false
	for i, sg := range sigs {
		p := sg.str("pattern")
		parts[i] = narrOr(narrClean(strings.ReplaceAll(p, "_", " "), 80), "an unnamed pattern")
		if sev := sg.str("severity"); sev != "" {
			parts[i] += " (" + narrClean(sev, 20) + ")"
			critical = critical || sev == "critical"
		}
		if g, ok := narrSignals[p]; ok {
			parts[i] += ": " + g
		}
	}
	s += " " + narrCapital(narrCountWord(len(sigs), "signal", "signals")) + " fired: " + strings.Join(parts, "; ") + "."
	if critical {
		s += " A critical signal can lower the score in the UCS adjustment step."
	} else {
		s += " Only critical signals change the score; this one is recorded for review."
		if len(sigs) > 1 {
			s = strings.TrimSuffix(s, " this one is recorded for review.") + " these are recorded for review."
		}
	}
	return s
}

func (n *narrator) stepTier1(in, out narrState) string {
	s := "At the veto gate any veto settles the outcome at once, without a score."
	vetoes := in.strings("vetoes")
	v := out.str("verdict")
	switch {
	case v == "continue" || (v == "" && len(vetoes) == 0):
		return s + " There was no veto, so the evaluation went on to scoring."
	case v == "ESCALATE":
		return s + " The only veto came from human override, which means a person must review the action, so the action was held for human review (ESCALATE)."
	case v == "DENY":
		names := make([]string, len(vetoes))
		for i, x := range vetoes {
			names[i] = narrVeto(x)
		}
		if len(names) == 0 {
			return s + " The action was denied (DENY); the vetoes were not recorded in this step."
		}
		return s + " The " + narrPlural(len(names), "veto", "vetoes") + " from " + narrJoin(names, "and") + " meant the action was denied (DENY) and its UCS set to 0."
	}
	return s + narrVerdictSentence(v)
}

func (n *narrator) stepUCS(in, out narrState) string {
	s := "The Unified Confidence Score (UCS) combines the dimension scores into one number from 0 to 1."
	if base, ok := out.num("base"); ok {
		s += " The weighted average of the scores"
		if ws, ok := in.num("weight_sum"); ok {
			s += " (total weight " + narrNum(ws) + ")"
		}
		s += " was " + narrNum(base) + "."
	}
	if shift, ok := out.num("trust_shift"); ok {
		s += " The agent's trust"
		if t, ok := in.num("trust"); ok {
			s += " of " + narrNum(t)
		}
		if narrNum(shift) == "0" {
			s += " left it unchanged (trust above 0.5 raises the score, below 0.5 lowers it)."
		} else {
			s += " shifted it by " + narrSigned(shift) + " (trust above 0.5 raises the score, below 0.5 lowers it)."
		}
	}
	if drag, ok := out.num("floor_drag"); ok {
		low := ""
		if m, ok := in.num("min_score"); ok {
			low = ", " + narrNum(m) + ","
		}
		if narrNum(drag) == "0" {
			s += " The lowest dimension score" + low + " was not low enough to pull the result down."
		} else {
			s += " The lowest dimension score" + low + " was very low and pulled the result down by " + narrNum(drag) + "."
		}
	}
	if u, ok := out.num("ucs"); ok {
		s += " The resulting UCS was " + narrNum(u) + "."
	} else {
		s += " The resulting UCS was not recorded."
	}
	return s
}

func (n *narrator) stepUCSAdjust(in, out narrState) string {
	s := "Each critical cross-dimensional signal lowers the UCS by a fixed amount when the score lies between the deny and allow thresholds."
	crit, okC := in.num("critical_signals")
	adj, okA := out.num("adjustment")
	u, okU := out.num("ucs")
	before, okB := in.num("ucs")
	switch {
	case okA && narrNum(adj) != "0":
		s += " There " + narrIsAre(int(crit), "critical signal", "critical signals") + ", so the UCS was lowered by " + narrNum(math.Abs(adj))
		if okB && okU {
			s += ", from " + narrNum(before) + " to " + narrNum(u)
		}
		s += "."
	case okC && crit > 0:
		s += " There " + narrIsAre(int(crit), "critical signal", "critical signals") + ", but the UCS lay outside that band, so it was not adjusted"
		if okU {
			s += " and stayed " + narrNum(u)
		}
		s += "."
	case okC:
		s += " There were no critical signals, so the UCS was not adjusted"
		if okU {
			s += " and stayed " + narrNum(u)
		}
		s += "."
	default:
		if okU {
			s += " The UCS after this step was " + narrNum(u) + "."
		} else {
			s += " The outcome of this step was not recorded."
		}
	}
	return s
}

func (n *narrator) stepEscalation(in, out narrState) string {
	s := "An irreversible action is never decided on its score alone: it skips the score thresholds (tier 2) and goes to deliberation (tier 3)."
	level := in.str("level")
	forced, ok := out.boolean("forced_tier3")
	if !ok {
		forced = n.e.Reversibility.ForcedTier3
	}
	lv := ""
	if level != "" {
		lv = " is " + narrClean(level, 40) + ", so it"
	} else {
		lv = ""
	}
	if forced {
		if lv == "" {
			return s + " The action was sent straight to tier 3; tier 2 was skipped."
		}
		return s + " The action" + lv + " was sent straight to tier 3; tier 2 was skipped."
	}
	if lv == "" {
		return s + " The action was not forced to tier 3 and went on to the score thresholds."
	}
	return s + " The action" + lv + " was not forced to tier 3 and went on to the score thresholds."
}

func (n *narrator) stepTier2(in, out narrState) string {
	allow, okA := in.num("allow_threshold")
	deny, okD := in.num("deny_threshold")
	u, okU := in.num("ucs")
	s := "A UCS at or above the allow threshold"
	if okA {
		s += " (" + narrNum(allow) + ")"
	}
	s += " allows the action; at or below the deny threshold"
	if okD {
		s += " (" + narrNum(deny) + ")"
	}
	s += " denies it; a score in between goes to deliberation."
	us := "The UCS"
	if okU {
		us = "The UCS of " + narrNum(u)
	}
	switch v := out.str("verdict"); v {
	case "ALLOW":
		s += " " + us + " is at or above the allow threshold, so the action was allowed (ALLOW)."
	case "DENY":
		s += " " + us + " is at or below the deny threshold, so the action was denied (DENY)."
	case "continue":
		s += " " + us + " lies between the two thresholds, so neither decided and the action went on to tier 3."
	default:
		s += narrVerdictSentence(v)
	}
	return s
}

func (n *narrator) stepTier3(in, out narrState) string {
	s := "Deliberation applies rules in order: any custom deliberators configured by the operator; then a well-trusted agent with a good score is allowed; an agent with low trust is held for review; an irreversible action is held for review; a heavily weighted dimension with a low score leads to modifications; otherwise the action is allowed."
	var facts []string
	if u, ok := in.num("ucs"); ok {
		facts = append(facts, "UCS "+narrNum(u))
	}
	trust, okT := in.num("trust")
	if okT {
		facts = append(facts, "trust "+narrNum(trust))
	}
	if r := in.str("reversibility"); r != "" {
		facts = append(facts, "reversibility "+narrClean(r, 40))
	}
	if d, ok := in.num("deliberators"); ok {
		facts = append(facts, narrCount(int(d), "custom deliberator", "custom deliberators"))
	}
	if len(facts) > 0 {
		s += " Inputs: " + strings.Join(facts, ", ") + "."
	}
	ts := "the agent's trust"
	if okT {
		ts += " (" + narrNum(trust) + ")"
	}
	rule := out.str("rule")
	switch {
	case rule == "trusted":
		s += " The deciding rule was \"trusted\": the agent is well trusted and the score is good enough for it to act."
	case rule == "low_trust":
		s += " The deciding rule was \"low trust\": " + ts + " is too low for it to act without a person's review."
	case rule == "irreversible":
		s += " The deciding rule was \"irreversible\": the action cannot be undone and " + ts + " is not high enough for the agent to take it alone."
	case rule == "weak_dimension":
		s += " The deciding rule was \"weak dimension\": "
		if d := n.weakDimension(); d != nil {
			s += narrDim(d.Dimension) + ", which carries a heavy weight (" + narrNum(d.Weight) + "), scored only " + narrNum(d.Score) + ", so the action may go ahead only in a reduced, confirmed form."
		} else {
			s += "a heavily weighted dimension scored low, so the action may go ahead only in a reduced, confirmed form."
		}
	case rule == "default":
		s += " No deliberation rule raised a concern, so the default applied."
	case strings.HasPrefix(rule, "deliberator "):
		s += " A custom deliberator configured by the operator (" + narrClean(rule, 40) + ") decided."
	case rule != "":
		s += " The deciding rule was " + narrQuote(rule, 60) + "."
	}
	return s + narrVerdictSentence(out.str("verdict"))
}

// weakDimension finds the dimension that the tier 3 reasoning names
// ("<dimension> (weight w) scores s").
func (n *narrator) weakDimension() *governor.DimensionScore {
	for i, d := range n.e.DimensionScores {
		if d.Dimension != "" && strings.Contains(n.e.Verdict.Reasoning, d.Dimension+" (weight ") {
			return &n.e.DimensionScores[i]
		}
	}
	return nil
}

// ---- state after the decision ----
