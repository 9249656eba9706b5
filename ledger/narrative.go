package ledger

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vigilhq/vigil/governor"
)

// Narrative is the compliance narrative of an entry (API.md section 8,
// GET /v1/ledger/{agent_id}/narrative/{sequence}): plain text for a reviewer
// who is not an engineer, reconstructed from the entry alone. It has five
// parts, each a paragraph (the pipeline part one paragraph per step):
//
//  1. a heading: the agent, sequence, time, the attempted action and the
//     outcome in one sentence;
//  2. one paragraph per recorded pipeline step, in order, explaining what the
//     step checked and found from its recorded input and output states; the
//     deciding step says so, and which later steps were not run;
//  3. the agent's state after the decision: trust, drift, fingerprint, the
//     instruction and its anchor terms, directives and causal links;
//  4. what would change the outcome (action_to_pass);
//  5. integrity: prev_hash, hash and how to verify them.
//
// Paragraphs are separated by one blank line. Each paragraph is one line,
// except the dimension list of the dimension evaluation step, which has one
// line per dimension. Numbers have at most 3 decimals; maps are read in
// sorted key order, so the same entry always gives the same text. Missing
// or malformed states are tolerated: the narrative says what it could not
// read and never panics.
func Narrative(e *Entry) string {
	if e == nil {
		return "No ledger entry was given.\n"
	}
	n := &narrator{e: e}
	paras := []string{n.heading()}
	paras = append(paras, n.steps()...)
	paras = append(paras, n.state(), n.toPass(), n.integrity())
	return strings.Join(paras, "\n\n") + "\n"
}

// narrUnknownStep is the wording of the fallback for a step name the
// narrative has no template for (tests check it is never hit for the
// governor's steps).
const narrUnknownStep = "is not a step this narrative knows"

// narrStepOrder is the pipeline order of GOVERNOR.md section 1.
var narrStepOrder = []string{"quarantine", "suspension", "trust_decay", "contextual_modifier", "reversibility",
	"dimension_eval", "cross_dimensional", "tier1", "ucs_compute", "ucs_adjustment", "reversibility_escalation",
	"tier2", "tier3"}

type narrStepTemplate struct {
	title string
	// short names the step in a list of steps.
	short string
	// explain writes the body of the paragraph (after the label).
	explain func(n *narrator, in, out narrState) string
}

// narrSteps holds a paragraph template for every pipeline step.
var narrSteps = map[string]narrStepTemplate{
	"quarantine":               {"quarantine check", "quarantine check", (*narrator).stepQuarantine},
	"suspension":               {"suspension check", "suspension check", (*narrator).stepSuspension},
	"trust_decay":              {"trust decay", "trust decay", (*narrator).stepTrustDecay},
	"contextual_modifier":      {"contextual modifier", "contextual modifier", (*narrator).stepContext},
	"reversibility":            {"reversibility", "reversibility", (*narrator).stepReversibility},
	"dimension_eval":           {"dimension evaluation", "dimension evaluation", (*narrator).stepDimensions},
	"cross_dimensional":        {"cross-dimensional signals", "cross-dimensional signals", (*narrator).stepCross},
	"tier1":                    {"tier 1, the veto gate", "tier 1", (*narrator).stepTier1},
	"ucs_compute":              {"UCS computation", "UCS computation", (*narrator).stepUCS},
	"ucs_adjustment":           {"UCS adjustment", "UCS adjustment", (*narrator).stepUCSAdjust},
	"reversibility_escalation": {"reversibility escalation", "reversibility escalation", (*narrator).stepEscalation},
	"tier2":                    {"tier 2, the score thresholds", "tier 2", (*narrator).stepTier2},
	"tier3":                    {"tier 3, deliberation", "tier 3", (*narrator).stepTier3},
}

var narrDimensions = map[string][2]string{
	"scope_compliance":       {"scope compliance", "is this kind of action within the agent's mandate?"},
	"authority_verification": {"authority verification", "do the action's details satisfy the agent's authority rules?"},
	"resource_boundaries":    {"resource boundaries", "is the agent within its rate, concurrency and cost limits?"},
	"behavioral_consistency": {"behavioural consistency", "is this typical of the agent's past behaviour?"},
	"cascading_impact":       {"cascading impact", "how far could the effects spread?"},
	"stakeholder_impact":     {"stakeholder impact", "does it touch sensitive or external parties?"},
	"incident_detection":     {"incident detection", "does the activity look like an incident in progress?"},
	"isolation_integrity":    {"isolation integrity", "does the target lie within the agent's boundaries?"},
	"temporal_compliance":    {"temporal compliance", "is the timing allowed?"},
	"precedent_alignment":    {"precedent alignment", "how were similar actions decided before?"},
	"transparency":           {"transparency", "is the action fully described?"},
	"human_override":         {"human override", "must a person approve it?"},
	"ethical_alignment":      {"ethical alignment", "do the constitutional rules hold?"},
}

var narrSignals = map[string]string{
	"discriminatory_compliance":   "the action is in scope and authorised, yet scores low on ethics or on its impact on stakeholders",
	"empathetic_exploitation":     "an incident pattern and unusual behaviour while the ethics check passes",
	"invisible_wall":              "a fully in-scope action with little precedent that affects stakeholders",
	"trust_authority_mismatch":    "an authorised but unusual action from an agent with low trust",
	"cascade_without_isolation":   "effects that could spread widely, without strong isolation of the target",
	"temporal_security_gap":       "a timing concern together with an incident signal",
	"opacity_under_pressure":      "a poorly described action that affects stakeholders",
	"precedent_break_under_drift": "an action without good precedent from an agent whose behaviour is shifting",
}

var narrModifications = map[string]string{
	"reduce_scope":         "narrow what the action touches",
	"require_confirmation": "obtain a confirmation before it takes effect",
}

var narrLevels = map[string]string{
	"reversible":   "its effects can be undone",
	"compensable":  "its effects can only be offset by a later compensating action",
	"irreversible": "its effects cannot be undone",
}

type narrator struct {
	e *Entry
}

// ---- heading ----

func (n *narrator) heading() string {
	e := n.e
	var b strings.Builder
	fmt.Fprintf(&b, "Ledger entry %d for agent %s records Vigil's decision on action %s, made %s.",
		e.Sequence, narrQuote(e.AgentID, 120), narrOr(narrClean(e.ActionID, 120), "(no action id)"), narrWhen(e.Timestamp))
	b.WriteString(" The agent attempted ")
	if e.Action.Type == "" {
		b.WriteString("an action with no recorded type")
	} else {
		b.WriteString("an action of type " + narrQuote(e.Action.Type, 120))
	}
	if e.Action.Target == "" {
		b.WriteString(" with no recorded target")
	} else {
		b.WriteString(" on the target " + narrQuote(e.Action.Target, 200))
	}
	b.WriteString(", " + narrParams(e.Action.Parameters) + ".")
	b.WriteString(" " + narrSource(e.Action.Source, e.Action.Method))
	b.WriteString(" " + n.outcome())
	switch e.Verdict.Tier {
	case 0:
		b.WriteString(" The decision was made by a pre-check, before any evaluation.")
	case 1:
		b.WriteString(" The decision was made at tier 1, the veto gate, before any score was computed.")
	case 2:
		fmt.Fprintf(&b, " The decision was made at tier 2, the score thresholds, with a Unified Confidence Score (UCS) of %s on a scale from 0 to 1.", narrNum(e.Verdict.UCS))
	case 3:
		fmt.Fprintf(&b, " The decision was made at tier 3, deliberation, with a Unified Confidence Score (UCS) of %s on a scale from 0 to 1.", narrNum(e.Verdict.UCS))
	default:
		fmt.Fprintf(&b, " The entry records an unknown tier %d, with a UCS of %s.", e.Verdict.Tier, narrNum(e.Verdict.UCS))
	}
	if r := narrClean(e.Verdict.Reasoning, 1000); r != "" {
		b.WriteString(" Vigil's recorded reasoning: \"" + r + "\"")
		if !strings.HasSuffix(r, ".") {
			b.WriteString(".")
		}
	}
	return b.String()
}

func (n *narrator) outcome() string {
	v := n.e.Verdict
	switch v.Decision {
	case "ALLOW":
		return "Vigil allowed the action (ALLOW)."
	case "DENY":
		return "Vigil denied the action (DENY)."
	case "ESCALATE":
		return "Vigil held the action for human review (ESCALATE)."
	case "MODIFY":
		if len(v.Modifications) == 0 {
			return "Vigil allowed the action with modifications (MODIFY), but the entry does not name them."
		}
		mods := make([]string, len(v.Modifications))
		for i, m := range v.Modifications {
			mods[i] = narrClean(m, 80)
			if g, ok := narrModifications[m]; ok {
				mods[i] += " (" + g + ")"
			}
		}
		return "Vigil allowed the action with modifications (MODIFY): " + strings.Join(mods, ", ") + "."
	case "SUSPEND":
		return "Vigil refused the action because the agent is suspended (SUSPEND)."
	case "":
		return "The entry records no outcome."
	}
	return "The entry records the outcome " + narrQuote(v.Decision, 40) + ", which is not a verdict this narrative knows."
}

func narrWhen(ts string) string {
	t, err := ParseTime(ts)
	if err != nil {
		if ts == "" {
			return "at an unrecorded time"
		}
		return "at the recorded time " + narrQuote(ts, 60)
	}
	t = t.UTC()
	layout := "Monday 2 January 2006 at 15:04:05 UTC"
	if t.Nanosecond() != 0 {
		layout = "Monday 2 January 2006 at 15:04:05.000 UTC"
	}
	return "on " + t.Format(layout) + " (" + narrClean(ts, 60) + ")"
}

func narrSource(source, method string) string {
	m := ""
	if method != "" {
		m = ", HTTP method " + narrClean(method, 20)
	}
	switch source {
	case "proxy":
		return "The call was intercepted by the Vigil proxy" + m + "."
	case "api":
		return "The action was submitted through the Vigil API" + m + "."
	case "simulation":
		return "The action came from a simulation" + m + "."
	case "":
		return "The entry does not record where the action came from" + m + "."
	}
	return "The action came from the source " + narrQuote(source, 40) + m + "."
}

// narrMaxParams is how many parameters the heading lists.
const narrMaxParams = 10

func narrParams(p map[string]any) string {
	if len(p) == 0 {
		return "with no parameters"
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	shown := keys
	if len(shown) > narrMaxParams {
		shown = shown[:narrMaxParams]
	}
	parts := make([]string, len(shown))
	for i, k := range shown {
		parts[i] = narrClean(k, 60) + " = " + narrValue(p[k])
	}
	s := "with " + narrCount(len(keys), "parameter", "parameters") + ": " + strings.Join(parts, "; ")
	if more := len(keys) - len(shown); more > 0 {
		s += "; and " + narrCount(more, "more parameter", "more parameters") + " not listed here"
	}
	return s
}

func narrValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return narrQuote(x, 80)
	case bool:
		return strconv.FormatBool(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		if math.Abs(x) < 1e15 {
			return narrTrunc(strconv.FormatFloat(x, 'f', -1, 64), 40)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case json.Number:
		return narrTrunc(x.String(), 40)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "(a value that cannot be shown)"
	}
	return narrClean(string(b), 80)
}

// ---- pipeline steps ----

func (n *narrator) steps() []string {
	p := n.e.Pipeline
	if len(p) == 0 {
		return []string{"Pipeline. The entry records no pipeline steps, so the decision cannot be reconstructed step by step."}
	}
	out := make([]string, 0, len(p)+1)
	decided := false
	for i, s := range p {
		in, inOK := narrDecode(s.InputState)
		o, outOK := narrDecode(s.OutputState)
		var b strings.Builder
		tpl, known := narrSteps[s.Step]
		if known {
			fmt.Fprintf(&b, "Step %d — %s. ", i+1, tpl.title)
			b.WriteString(tpl.explain(n, in, o))
		} else {
			fmt.Fprintf(&b, "Step %d — %s. This %s; its recorded input was %s and its output %s.",
				i+1, narrQuote(s.Step, 60), narrUnknownStep, narrRaw(s.InputState), narrRaw(s.OutputState))
		}
		if known && (!inOK || !outOK) {
			b.WriteString(" (Part of this step's recorded state is missing or unreadable; the description above uses what could be read.)")
		}
		if s.DecidedVerdict {
			decided = true
			b.WriteString(" This step decided the outcome.")
			b.WriteString(n.notRun(s.Step, i))
		}
		out = append(out, b.String())
	}
	if !decided {
		out = append(out, "Pipeline. No step is recorded as having decided the outcome, so this entry is incomplete or damaged.")
	}
	return out
}

// notRun names the steps after the deciding one that were not run.
func (n *narrator) notRun(step string, pos int) string {
	if step == "quarantine" || step == "suspension" {
		return " No other check was run: this pre-check stops the evaluation before it starts."
	}
	k := -1
	for i, name := range narrStepOrder {
		if name == step {
			k = i
		}
	}
	if k < 0 {
		return ""
	}
	recorded := map[string]bool{}
	for _, s := range n.e.Pipeline[pos+1:] {
		recorded[s.Step] = true
	}
	var later []string
	for _, name := range narrStepOrder[k+1:] {
		if !recorded[name] {
			later = append(later, narrSteps[name].short)
		}
	}
	switch len(later) {
	case 0:
		return ""
	case 1:
		return " The later step (" + later[0] + ") was not run because the decision was already made."
	}
	return " The later steps (" + narrJoin(later, "and") + ") were not run because the decision was already made."
}

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

func (n *narrator) state() string {
	e := n.e
	bs := e.BehavioralState
	var b strings.Builder
	b.WriteString("Agent state after the decision. The agent's trust score now stands at " + narrNum(bs.Trust))
	b.WriteString(".")
	if bs.TrustDirection != "" {
		b.WriteString(" Judged by its recent trust changes, its trust is " + narrHuman(bs.TrustDirection) + ";")
	} else {
		b.WriteString(" Its trust direction was not recorded;")
	}
	b.WriteString(" the average change per evaluation over its recent evaluations (trust velocity) is " + narrSigned(bs.TrustVelocity) + ".")
	d := bs.Drift
	b.WriteString(" Behavioural drift, which measures how far the agent's recent behaviour departs from its established pattern (0 none, 1 entirely different), is " + narrNum(d.Overall) + " overall")
	if bs.Severity != "" {
		b.WriteString(", severity " + narrHuman(bs.Severity))
	}
	if d.Action != 0 || d.Target != 0 || d.Temporal != 0 || d.Outcome != 0 || d.Semantic != 0 {
		b.WriteString(" (action types " + narrNum(d.Action) + ", targets " + narrNum(d.Target) + ", timing " + narrNum(d.Temporal) +
			", outcomes " + narrNum(d.Outcome) + ", meaning of instructions " + narrNum(d.Semantic) + ")")
	}
	if bs.DriftConfidence != 0 {
		b.WriteString(", measured with confidence " + narrNum(bs.DriftConfidence))
	}
	b.WriteString(". The agent's behavioural fingerprint rests on " + narrCount(bs.Observations, "observation", "observations") +
		", with a confidence of " + narrNum(bs.FingerprintConfidence) + " on a scale from 0 to 1.")

	sc := e.SemanticContext
	if sc.InstructionContext == "" {
		b.WriteString(" No instruction was recorded with this action, so no anchor terms were checked.")
	} else {
		b.WriteString(" The agent was acting on the instruction " + narrQuote(sc.InstructionContext, 200))
		if len(sc.MatchedAnchorTerms) == 0 {
			b.WriteString(", which contains none of the anchor terms of its contract.")
		} else {
			anchors := n.anchors()
			terms := make([]string, len(sc.MatchedAnchorTerms))
			for i, t := range sc.MatchedAnchorTerms {
				terms[i] = narrQuote(t, 60)
				if m := anchors[t]; m != "" {
					terms[i] += " (defined as " + narrQuote(m, 160) + ")"
				}
			}
			b.WriteString(", which contains the contract's anchor " + narrPlural(len(terms), "term", "terms") + " " + narrJoin(terms, "and") + ".")
		}
		if len(sc.PerTermDrift) > 0 {
			keys := make([]string, 0, len(sc.PerTermDrift))
			for k := range sc.PerTermDrift {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = narrQuote(k, 60) + " " + narrNum(sc.PerTermDrift[k])
			}
			b.WriteString(" How far the agent's use of each term has moved from how it was first used (0 not at all, 1 entirely): " + strings.Join(parts, ", ") + ".")
		}
		b.WriteString(" Aggregate semantic drift: " + narrNum(sc.AggregateDrift) + ".")
	}

	if len(e.Directives) == 0 {
		b.WriteString(" No directives were in force for the agent.")
	} else {
		b.WriteString(" Directives in force for the agent: " + narrJoinClean(e.Directives, 80) + ".")
	}

	if len(e.CausalLinks) == 0 {
		b.WriteString(" No earlier decision is linked to this one.")
	}
	for _, l := range e.CausalLinks {
		b.WriteString(" " + narrLink(l))
	}
	return b.String()
}

func (n *narrator) anchors() map[string]string {
	var c struct {
		Anchors map[string]any `json:"anchors"`
	}
	if len(n.e.ContractSnapshot) == 0 || json.Unmarshal(n.e.ContractSnapshot, &c) != nil {
		return nil
	}
	out := make(map[string]string, len(c.Anchors))
	for k, v := range c.Anchors {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func narrLink(l CausalLink) string {
	ref := ""
	switch {
	case l.Sequence > 0 && l.ActionID != "":
		ref = "entry " + strconv.FormatInt(l.Sequence, 10) + " (action " + narrClean(l.ActionID, 120) + ")"
	case l.Sequence > 0:
		ref = "entry " + strconv.FormatInt(l.Sequence, 10)
	case l.ActionID != "":
		ref = "action " + narrClean(l.ActionID, 120) + " (not recorded in this ledger, for example a dry run)"
	default:
		ref = "an earlier decision that the entry does not identify"
	}
	moved := "which moved trust from " + narrNum(l.TrustBefore) + " to " + narrNum(l.TrustAfter)
	if narrNum(l.TrustBefore) == narrNum(l.TrustAfter) {
		moved = "which left trust unchanged at " + narrNum(l.TrustAfter)
	}
	switch l.Kind {
	case "predecessor":
		return "This decision follows " + ref + ", " + moved + "."
	case "resubmission":
		s := "This action repeats an identical action that was denied in " + ref
		if l.Influence < 0 {
			return s + " and, as a resubmission, lowered the trust used for this evaluation by " + narrNum(-l.Influence) + "."
		}
		return s + "."
	}
	return "This decision is linked to " + ref + " as " + narrOr(narrQuote(l.Kind, 40), "an unnamed link") + " (influence " + narrSigned(l.Influence) + "), " + moved + "."
}

// ---- what would change the outcome ----

type narrToPass struct {
	DimensionGaps []struct {
		Dimension string  `json:"dimension"`
		Score     float64 `json:"score"`
		Needed    float64 `json:"needed"`
	} `json:"dimension_gaps"`
	UCSNeeded    *float64 `json:"ucs_needed"`
	Gap          *float64 `json:"gap"`
	MarginToDeny *float64 `json:"margin_to_deny"`
	ClosestVeto  *struct {
		Dimension string  `json:"dimension"`
		Score     float64 `json:"score"`
	} `json:"closest_veto_dimension"`
	Requires string `json:"requires"`
}

func (n *narrator) toPass() string {
	const label = "What would change the outcome."
	e := n.e
	var tp narrToPass
	if len(e.ActionToPass) == 0 || json.Unmarshal(e.ActionToPass, &tp) != nil {
		return label + " The entry records nothing readable about what would change the outcome."
	}
	var parts []string
	switch e.Verdict.Decision {
	case "DENY":
		if len(tp.DimensionGaps) > 0 {
			gaps := make([]string, len(tp.DimensionGaps))
			for i, g := range tp.DimensionGaps {
				if name, ok := strings.CutPrefix(g.Dimension, "invariant:"); ok {
					gaps[i] = "the invariant " + narrQuote(name, 80) + " would have to hold"
					continue
				}
				vetoed := false
				for _, v := range e.Verdict.Vetoes {
					vetoed = vetoed || v == g.Dimension
				}
				gaps[i] = narrDim(g.Dimension) + " would need a score of at least " + narrNum(g.Needed) + " (it scored " + narrNum(g.Score)
				if vetoed {
					gaps[i] += " and vetoed the action"
				}
				gaps[i] += ")"
			}
			parts = append(parts, "For this action to pass, "+narrJoin(gaps, "and")+".")
		}
		if tp.UCSNeeded != nil {
			switch {
			case e.Verdict.Tier <= 1 && e.Reversibility.Level == "irreversible":
				parts = append(parts, "While a veto stands the UCS is set to 0. Even with the veto removed, the action would not be allowed on its score alone: being irreversible, it would go to deliberation (tier 3).")
			case e.Verdict.Tier <= 1:
				parts = append(parts, "While a veto stands the UCS is set to 0; with the veto removed, the UCS would also need to reach "+narrNum(*tp.UCSNeeded)+" for the action to be allowed automatically at tier 2.")
			default:
				s := "The UCS would need to reach " + narrNum(*tp.UCSNeeded) + " (the allow threshold); it was " + narrNum(e.Verdict.UCS)
				if tp.Gap != nil {
					s += ", a gap of " + narrNum(*tp.Gap)
				}
				parts = append(parts, s+".")
			}
		}
	case "ALLOW":
		if tp.MarginToDeny != nil {
			parts = append(parts, "The action was allowed with a margin of "+narrNum(*tp.MarginToDeny)+": its UCS would have to fall by that much to reach the deny threshold.")
		}
		if tp.ClosestVeto != nil {
			parts = append(parts, "Of the dimensions that can veto, the lowest-scoring was "+narrDim(tp.ClosestVeto.Dimension)+" at "+narrNum(tp.ClosestVeto.Score)+"; a veto from it, or from any other dimension, would block the action whatever the score.")
		}
	default:
		if req := narrClean(tp.Requires, 300); req != "" {
			switch e.Verdict.Decision {
			case "ESCALATE":
				parts = append(parts, "For the action to go ahead, it needs "+req+".")
			case "MODIFY":
				parts = append(parts, "The action may go ahead only with "+req+".")
			case "SUSPEND":
				parts = append(parts, "For the agent to act again, it needs "+req+".")
			default:
				parts = append(parts, "The entry records as required: "+req+".")
			}
		}
		if tp.UCSNeeded != nil {
			switch {
			case e.Verdict.Tier <= 1:
				parts = append(parts, "No score was computed, because the action was stopped at the veto gate.")
			case e.Reversibility.ForcedTier3:
				parts = append(parts, "Because the action is irreversible, no score could have allowed it automatically: it always goes to deliberation (its UCS was "+narrNum(e.Verdict.UCS)+").")
			case tp.Gap != nil && narrNum(*tp.Gap) != "0":
				parts = append(parts, "It would have been allowed without conditions had its UCS reached "+narrNum(*tp.UCSNeeded)+"; it was "+narrNum(e.Verdict.UCS)+", a gap of "+narrNum(*tp.Gap)+".")
			default:
				parts = append(parts, "The UCS ("+narrNum(e.Verdict.UCS)+") already met "+narrNum(*tp.UCSNeeded)+"; the score is not what held the action back.")
			}
		}
	}
	if len(parts) == 0 {
		return label + " The entry records nothing about what would change the outcome."
	}
	return label + " " + strings.Join(parts, " ")
}

// ---- integrity ----

func (n *narrator) integrity() string {
	e := n.e
	s := "Integrity. "
	prev := narrClean(e.PrevHash, 200)
	switch {
	case prev == "":
		s += "The entry records no prev_hash."
	case prev == ZeroHash:
		s += "The entry's prev_hash is " + prev + " (64 zeros: this is the agent's first entry)."
	default:
		s += "The entry's prev_hash, the hash of the agent's previous entry, is " + prev + "."
	}
	if h := narrClean(e.Hash, 200); h != "" {
		s += " Its own hash is " + h + "."
	} else {
		s += " The entry carries no hash of its own (it has not been exported)."
	}
	s += " The hash is the SHA-256, in lowercase hexadecimal, of the RFC 8785 (JCS) canonical JSON of the entry without its hash field; each entry's prev_hash must equal the hash of the entry before it, so altering any entry breaks the chain."
	s += " Anyone can recompute it with this rule alone, or run \"vigil ledger verify\" against the server, or \"vigil ledger verify-file\" on an exported chain."
	return s
}

// ---- reading states ----

// narrState is a decoded step state (a JSON object).
type narrState map[string]any

// narrDecode reads a raw state; ok is false when it is missing or not a JSON
// object.
func narrDecode(raw json.RawMessage) (narrState, bool) {
	if len(raw) == 0 {
		return narrState{}, false
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return narrState{}, false
	}
	return narrState(m), true
}

func (m narrState) get(k string) any { return m[k] }

func (m narrState) num(k string) (float64, bool) {
	f, ok := m[k].(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func (m narrState) str(k string) string {
	s, _ := m[k].(string)
	return s
}

func (m narrState) boolean(k string) (bool, bool) {
	b, ok := m[k].(bool)
	return b, ok
}

// strings reads a list of strings (nil when absent or not a list).
func (m narrState) strings(k string) []string {
	l, ok := m[k].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (m narrState) obj(k string) narrState {
	o, _ := m[k].(map[string]any)
	return narrState(o)
}

// list reads a list of objects (nil when absent or not a list).
func (m narrState) list(k string) []narrState {
	l, ok := m[k].([]any)
	if !ok {
		return nil
	}
	out := make([]narrState, 0, len(l))
	for _, x := range l {
		if o, ok := x.(map[string]any); ok {
			out = append(out, narrState(o))
		}
	}
	return out
}

func narrRaw(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "empty"
	}
	return narrClean(string(raw), 200)
}

// ---- formatting ----

// narrNum formats a number with at most 3 decimals, trailing zeros trimmed.
func narrNum(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if math.Abs(f) >= 1e15 {
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	s := strconv.FormatFloat(f, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// narrSigned formats a change with its sign ("+0.1", "-0.05", "0").
func narrSigned(f float64) string {
	s := narrNum(f)
	if s != "0" && !strings.HasPrefix(s, "-") && !math.IsNaN(f) {
		s = "+" + s
	}
	return s
}

func narrDuration(sec float64) string {
	switch {
	case math.IsNaN(sec) || sec < 0:
		return "an unknown time"
	case sec < 1:
		return "less than a second"
	case sec < 60:
		return narrUnit(math.Round(sec), "second")
	case sec < 3600:
		return narrUnit(sec/60, "minute")
	case sec < 86400:
		return narrUnit(sec/3600, "hour")
	}
	return narrUnit(sec/86400, "day")
}

func narrUnit(v float64, unit string) string {
	r := math.Round(v*10) / 10
	s := narrNum(r)
	if r != 1 {
		unit += "s"
	}
	if r != v {
		return "about " + s + " " + unit
	}
	return s + " " + unit
}

func narrCount(n int, one, many string) string {
	switch n {
	case 0:
		return "no " + many
	case 1:
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// narrCountWord spells small counts out, for the start of a sentence.
func narrCountWord(n int, one, many string) string {
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n >= 0 && n < len(words) {
		if n == 1 {
			return words[n] + " " + one
		}
		return words[n] + " " + many
	}
	return strconv.Itoa(n) + " " + many
}

func narrPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func narrIsAre(n int, one, many string) string {
	if n == 1 {
		return "was 1 " + one
	}
	return "were " + strconv.Itoa(n) + " " + many
}

// narrDim names a dimension in words.
func narrDim(d string) string {
	if g, ok := narrDimensions[d]; ok {
		return g[0]
	}
	if d == "" {
		return "an unnamed dimension"
	}
	return narrClean(strings.ReplaceAll(d, "_", " "), 80)
}

// narrVeto names a veto: a dimension, or an invariant ("invariant:<name>").
func narrVeto(v string) string {
	if name, ok := strings.CutPrefix(v, "invariant:"); ok {
		return "the invariant " + narrQuote(name, 80)
	}
	return narrDim(v)
}

func narrHuman(s string) string { return narrClean(strings.ReplaceAll(s, "_", " "), 80) }

func narrCapital(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

func narrJoin(items []string, conj string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	case 2:
		return items[0] + " " + conj + " " + items[1]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}

func narrJoinClean(items []string, limit int) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = narrClean(s, limit)
	}
	return strings.Join(out, ", ")
}

func narrOr(s, alt string) string {
	if s == "" || s == `""` {
		return alt
	}
	return s
}

// narrQuote quotes a recorded string, cleaned and cut to limit runes.
func narrQuote(s string, limit int) string { return `"` + narrClean(s, limit) + `"` }

// narrClean makes a recorded string safe for one line of text: control
// characters become spaces, invalid UTF-8 is replaced, and it is cut to limit
// runes with an ellipsis.
func narrClean(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	return narrTrunc(s, limit)
}

func narrTrunc(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit]) + "…"
}
