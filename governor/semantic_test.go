package governor

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestMatchTerms(t *testing.T) {
	terms := []string{"refund", "wire transfer"}
	cases := []struct {
		name        string
		instruction string
		want        []string
	}{
		{"empty instruction", "", nil},
		{"case-insensitive whole word", "Please Refund order 7", []string{"refund"}},
		{"upper case", "REFUND NOW", []string{"refund"}},
		{"punctuation bounds a word", "refund.", []string{"refund"}},
		{"hyphen bounds a word", "a pre-refund check", []string{"refund"}},
		{"inflected form does not match", "the order was refunded", nil},
		{"prefix does not match", "nonrefund items", nil},
		{"underscore joins a word", "call refund_all", nil},
		{"later whole-word occurrence matches", "refunded, then refund again", []string{"refund"}},
		{"multi-word term", "send a Wire Transfer today", []string{"wire transfer"}},
		{"both terms, sorted", "wire transfer the refund", []string{"refund", "wire transfer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchTerms(terms, tc.instruction); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("no anchors", func(t *testing.T) {
		if got := matchTerms(nil, "refund"); got != nil {
			t.Errorf("got %q, want none", got)
		}
	})
}

// semanticEval evaluates n actions of type typ whose instruction mentions
// the anchor term "refund".
func semanticEval(t *testing.T, e *Engine, clk *fakeClock, typ string, n int) *Decision {
	t.Helper()
	var d *Decision
	for range n {
		d = evalReq(t, e, Request{AgentID: "a", Action: Action{Type: typ, Target: "orders/7", Parameters: map[string]any{"id": 7}},
			Context: Context{Instruction: "Please process the Refund for order 7"}})
		if d.Verdict != Allow {
			t.Fatalf("got %s, want ALLOW (%s)", d.Verdict, d.Reasoning)
		}
		clk.Advance(10 * time.Second)
	}
	return d
}

func termOf(t *testing.T, e *Engine, term string) termState {
	t.Helper()
	var out termState
	withState(t, e, "a", func(st *agentState) {
		ts := st.Terms[term]
		if ts == nil {
			t.Fatalf("no state for term %q", term)
		}
		out = *ts
		out.Anchored = maps.Clone(ts.Anchored)
	})
	return out
}

func TestSemanticAnchoring(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a", Anchors: map[string]string{"Refund": "return a customer's money"}})

	d := semanticEval(t, e, clk, "lookup_order", 1)
	if !slices.Equal(d.Semantic.MatchedAnchorTerms, []string{"refund"}) {
		t.Errorf("got matched terms %q, want [refund]", d.Semantic.MatchedAnchorTerms)
	}
	// An inflected form is not the term: not observed.
	evalReq(t, e, Request{AgentID: "a", Action: Action{Type: "lookup_order", Target: "orders/7", Parameters: map[string]any{"id": 7}},
		Context: Context{Instruction: "the order was refunded"}})
	if ts := termOf(t, e, "refund"); ts.Occurrences != 1 {
		t.Errorf("got %d occurrences, want 1", ts.Occurrences)
	}

	// The anchored distribution is the one of the first 20 occurrences.
	semanticEval(t, e, clk, "lookup_order", 28) // observations 3 to 30
	ts := termOf(t, e, "refund")
	if ts.Occurrences != 29 || ts.AnchoredN != 20 || !maps.Equal(ts.Anchored, map[string]float64{"lookup_order": 20}) {
		t.Errorf("got occurrences %d, anchored %v (n %d), want 29 and {lookup_order: 20} (n 20)", ts.Occurrences, ts.Anchored, ts.AnchoredN)
	}

	// The agent starts meaning something else by "refund": per-term drift
	// rises at every recomputation (observations 40, 50, 60, 70).
	var prev float64
	for round := range 4 {
		d = semanticEval(t, e, clk, "issue_credit", 10)
		got := d.Semantic.PerTermDrift["refund"]
		if d.State.Observations%10 != 0 {
			t.Fatalf("setup: got %d observations, want a recomputation", d.State.Observations)
		}
		if got <= prev {
			t.Errorf("round %d: got per-term drift %v, want more than %v", round, got, prev)
		}
		if !approx(d.Semantic.AggregateDrift, got) || !approx(d.State.Drift.Semantic, got) {
			t.Errorf("round %d: got aggregate %v (state %v), want %v (a single term)", round, d.Semantic.AggregateDrift, d.State.Drift.Semantic, got)
		}
		prev = got
	}
	if ts := termOf(t, e, "refund"); !maps.Equal(ts.Anchored, map[string]float64{"lookup_order": 20}) {
		t.Errorf("got anchored %v, want it unchanged by later occurrences", ts.Anchored)
	}

	// re_anchor resets the anchored distribution to the current window, once
	// per directive id.
	before := termOf(t, e, "refund").Drift
	e.SetOverlays(Overlays{"a": {ReAnchors: map[string]string{"refund": "dir_1"}}})
	semanticEval(t, e, clk, "issue_credit", 1) // observation 71
	ts = termOf(t, e, "refund")
	wantAnchored := map[string]float64{"lookup_order": 29, "issue_credit": 40}
	if ts.Drift != 0 || !maps.Equal(ts.Anchored, wantAnchored) {
		t.Errorf("after re_anchor: got drift %v anchored %v, want 0 and %v", ts.Drift, ts.Anchored, wantAnchored)
	}
	d = semanticEval(t, e, clk, "issue_credit", 9) // observation 80: recomputed
	if ts := termOf(t, e, "refund"); !maps.Equal(ts.Anchored, wantAnchored) {
		t.Errorf("same directive again: got anchored %v, want %v (applied once)", ts.Anchored, wantAnchored)
	}
	if got := d.Semantic.PerTermDrift["refund"]; got >= before {
		t.Errorf("after re_anchor: got per-term drift %v, want less than %v", got, before)
	}
	e.SetOverlays(Overlays{"a": {ReAnchors: map[string]string{"refund": "dir_2"}}})
	semanticEval(t, e, clk, "issue_credit", 1)
	if ts := termOf(t, e, "refund"); !maps.Equal(ts.Anchored, map[string]float64{"lookup_order": 29, "issue_credit": 50}) {
		t.Errorf("new directive: got anchored %v, want the current window", ts.Anchored)
	}
}

func TestSemanticContextRecorded(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a", Anchors: map[string]string{"refund": "x"}})
	long := "refund " + strings.Repeat("é", 600)
	d := evalReq(t, e, Request{AgentID: "a", Action: readAct(), Context: Context{Instruction: long}})
	if n := utf8.RuneCountInString(d.Semantic.InstructionContext); n != 512 {
		t.Errorf("got %d characters of instruction context, want 512", n)
	}
	if !strings.HasPrefix(d.Semantic.InstructionContext, "refund ") {
		t.Errorf("got instruction context %q..., want the start of the instruction", d.Semantic.InstructionContext[:10])
	}
	if !slices.Equal(d.Semantic.MatchedAnchorTerms, []string{"refund"}) {
		t.Errorf("got matched terms %q, want [refund]", d.Semantic.MatchedAnchorTerms)
	}
	d = evalReq(t, e, Request{AgentID: "a", Action: readAct()})
	if d.Semantic.MatchedAnchorTerms == nil || len(d.Semantic.MatchedAnchorTerms) != 0 {
		t.Errorf("got matched terms %#v, want an empty list", d.Semantic.MatchedAnchorTerms)
	}
}
