package ledger

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
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
