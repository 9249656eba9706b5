package ledger

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// The paragraphs after the steps: the agent's state, causal links, what
// would change the outcome, and integrity.

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
