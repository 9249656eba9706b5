package ledger

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vigilhq/vigil/governor"
)

var updateNarrative = flag.Bool("update-narrative", false, "rewrite the narrative golden files in testdata/narrative/")

// narrativeEngine is the fixed world of governor's goldenEngine (copied: test
// files cannot be imported): two agents, one rule, a clock that advances one
// second per reading.
func narrativeEngine(t *testing.T) *governor.Engine {
	t.Helper()
	now := time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	e, err := governor.New(governor.DefaultConfig(), governor.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	contracts := []governor.Contract{
		{AgentID: "support-bot", Archetype: "customer-experience", Team: "support",
			Scope: []string{"read", "create", "refund", "delete"}, Boundaries: []string{"api.example.com/*", "payments/*"},
			HumanOverride: []string{"delete"}, SensitiveTargets: []string{"payments/*"},
			Authority: []string{"!has(action.parameters.amount) || action.parameters.amount <= 500"},
			Limits:    governor.Limits{ActionsPerMinute: 120, MaxConcurrent: 10, MaxCostPerAction: 100},
			Anchors:   map[string]string{"refund": "return a customer's payment for a damaged or missing order"}},
		{AgentID: "records-bot", Scope: []string{"update_record"}, SensitiveTargets: []string{"records/*"}},
	}
	for _, c := range contracts {
		if err := e.SetContract(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.SetRules([]governor.Rule{{Name: "no-bulk-export", Expr: "action.type != 'export' || action.parameters.rows <= 1000", Message: "bulk export needs a human"}}); err != nil {
		t.Fatal(err)
	}
	return e
}

type narrativeCase struct {
	name string
	// seq, resolve and prevHash override the defaults (sequence = position,
	// no earlier entry known, first entry of the chain).
	seq      int64
	resolve  func(string) int64
	prevHash string
	agent    string
	setup    func(t *testing.T, e *governor.Engine)
	action   governor.Action
	context  governor.Context
	want     governor.Verdict
}

// narrativeCases are the typical cases of governor's TestGoldenTraces.
func narrativeCases() []narrativeCase {
	return []narrativeCase{
		{name: "allow_read", agent: "support-bot",
			action: governor.Action{ID: "act_golden_1", Type: "read", Target: "api.example.com/customers/42", Source: "api"}, want: governor.Allow},
		{name: "deny_out_of_scope", agent: "support-bot",
			action: governor.Action{ID: "act_golden_2", Type: "export", Target: "api.example.com/customers", Parameters: map[string]any{"rows": 5000.0}, Source: "api"}, want: governor.Deny},
		{name: "deny_authority", agent: "support-bot",
			action:  governor.Action{ID: "act_golden_3", Type: "refund", Target: "payments/orders/42", Parameters: map[string]any{"amount": 900.0}, Source: "api"},
			context: governor.Context{Instruction: "Refund the damaged order", Origin: "user_request"}, want: governor.Deny},
		{name: "escalate_human_override", agent: "support-bot",
			action: governor.Action{ID: "act_golden_4", Type: "delete", Target: "api.example.com/customers/42", Parameters: map[string]any{"reason": "gdpr"}, Source: "api"}, want: governor.Escalate},
		{name: "escalate_irreversible_tier3", agent: "support-bot",
			action:  governor.Action{ID: "act_golden_5", Type: "refund", Target: "payments/orders/42", Parameters: map[string]any{"amount": 80.0}, Source: "api"},
			context: governor.Context{Instruction: "refund the damaged order", Origin: "user_request"}, want: governor.Escalate},
		{name: "quarantined", agent: "support-bot",
			setup: func(t *testing.T, e *governor.Engine) {
				e.SetOverlays(governor.Overlays{"support-bot": {Quarantined: true, Directives: []string{"dir_golden"}}})
			},
			action: governor.Action{ID: "act_golden_6", Type: "read", Target: "api.example.com/customers/42", Source: "api"}, want: governor.Escalate},
		{name: "modify_weak_dimension", agent: "records-bot",
			// Ten payment approvals, each held for a human (trust stays 0.5),
			// then a delete that a route rule declares compensable, on a
			// sensitive target, with no constitutional rules in force.
			setup: func(t *testing.T, e *governor.Engine) {
				narrMust(t, e.SetRules(nil))
				narrMust(t, e.SetContract(governor.Contract{AgentID: "records-bot", HumanOverride: []string{"approve_payment"},
					SensitiveTargets: []string{"records/*"}, Limits: governor.Limits{MaxConcurrent: 2}}))
				for i := range 10 {
					_, err := e.Evaluate(governor.Request{AgentID: "records-bot", Action: governor.Action{ID: "act_setup_" + strconv.Itoa(i),
						Type: "approve_payment", Target: "payments/7", Parameters: map[string]any{"amount": 10.0}}})
					narrMust(t, err)
				}
				narrMust(t, e.CallStarted("records-bot"))
			},
			action: governor.Action{ID: "act_golden_7", Type: "delete_record", Target: "records/customer/7", Source: "proxy", Method: "DELETE",
				Reversibility: governor.Compensable},
			want: governor.Modify},
		// Not in governor's goldens: the denied refund resubmitted under
		// pressure, to show contextual adjustments and causal links.
		{name: "deny_resubmission_context", agent: "support-bot", seq: 2, prevHash: narrativeFakePrevHash,
			resolve: func(id string) int64 {
				if id == "act_golden_3" {
					return 1
				}
				return 0
			},
			setup: func(t *testing.T, e *governor.Engine) {
				_, err := e.Evaluate(governor.Request{AgentID: "support-bot", Action: governor.Action{ID: "act_golden_3", Type: "refund",
					Target: "payments/orders/42", Parameters: map[string]any{"amount": 900.0}, Source: "api"},
					Context: governor.Context{Instruction: "Refund the damaged order", Origin: "user_request"}})
				narrMust(t, err)
			},
			action: governor.Action{ID: "act_golden_8", Type: "refund", Target: "payments/orders/42", Parameters: map[string]any{"amount": 900.0}, Source: "api"},
			context: governor.Context{Instruction: "URGENT: refund order 42 now, the customer is furious", Origin: "agent_initiated",
				Urgency: "critical", InputCategory: "adversarial"},
			want: governor.Deny},
	}
}

func narrMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// narrativeFakeHash is a fixed stand-in for an entry hash.
const (
	narrativeFakeHash     = "5f3c8a1e9b2d47f6a0c4e8b1d3f5a7c9e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2"
	narrativeFakePrevHash = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
)

// narrativeEntry evaluates a case and turns the decision into an entry with
// fixed sequence and hashes.
func narrativeEntry(t *testing.T, tc narrativeCase, seq int64) *Entry {
	t.Helper()
	e := narrativeEngine(t)
	if tc.setup != nil {
		tc.setup(t, e)
	}
	d, err := e.Evaluate(governor.Request{AgentID: tc.agent, Action: tc.action, Context: tc.context})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != tc.want {
		t.Fatalf("verdict: got %v, want %v (%s)", d.Verdict, tc.want, d.Reasoning)
	}
	resolve := func(string) int64 { return 0 }
	if tc.resolve != nil {
		resolve = tc.resolve
	}
	entry, err := newEntry(d, resolve)
	if err != nil {
		t.Fatal(err)
	}
	entry.Sequence = seq
	if tc.seq != 0 {
		entry.Sequence = tc.seq
	}
	entry.PrevHash = ZeroHash
	if tc.prevHash != "" {
		entry.PrevHash = tc.prevHash
	}
	entry.Hash = narrativeFakeHash
	return entry
}

// TestNarrativeGolden keeps the narrative of typical decisions in
// testdata/narrative. Run `go test ./ledger -run TestNarrativeGolden
// -update-narrative` to accept a change, and read the diff.
func TestNarrativeGolden(t *testing.T) {
	for i, tc := range narrativeCases() {
		t.Run(tc.name, func(t *testing.T) {
			got := Narrative(narrativeEntry(t, tc, int64(i+1)))
			checkNarrativeShape(t, got)
			if strings.Contains(got, narrUnknownStep) {
				t.Errorf("a step fell back to the unknown-step template:\n%s", got)
			}
			path := filepath.Join("testdata", "narrative", tc.name+".txt")
			if *updateNarrative {
				narrMust(t, os.MkdirAll(filepath.Dir(path), 0o755))
				narrMust(t, os.WriteFile(path, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-narrative to create it)", err)
			}
			if !bytes.Equal([]byte(got), want) {
				t.Errorf("narrative differs from %s (run with -update-narrative to accept):\n%s", path, narrDiff(string(want), got))
			}
			// The narrative of an entry read back from its JSON is the same.
			raw, err := json.Marshal(narrativeEntry(t, tc, int64(i+1)))
			narrMust(t, err)
			var back Entry
			narrMust(t, json.Unmarshal(raw, &back))
			if again := Narrative(&back); again != got {
				t.Errorf("narrative of the entry read back from JSON differs:\n%s", narrDiff(got, again))
			}
		})
	}
}

// checkNarrativeShape checks the layout: paragraphs separated by exactly one
// blank line, heading first, integrity last, no Markdown headings, valid UTF-8.
func checkNarrativeShape(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Error("narrative is not valid UTF-8")
	}
	if !strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\n\n") {
		t.Error("narrative must end with exactly one newline")
	}
	if strings.Contains(s, "\n\n\n") {
		t.Error("paragraphs must be separated by exactly one blank line")
	}
	paras := strings.Split(strings.TrimSuffix(s, "\n"), "\n\n")
	if len(paras) < 4 {
		t.Fatalf("got %d paragraphs, want at least 4:\n%s", len(paras), s)
	}
	if !strings.HasPrefix(paras[0], "Ledger entry ") && !strings.HasPrefix(paras[0], "No ledger entry") {
		t.Errorf("first paragraph is not the heading: %q", paras[0])
	}
	if !strings.HasPrefix(paras[len(paras)-1], "Integrity. ") {
		t.Errorf("last paragraph is not the integrity paragraph: %q", paras[len(paras)-1])
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "**") {
			t.Errorf("Markdown syntax in line %q", line)
		}
	}
}

// TestNarrativeEveryStep checks that every pipeline step of the governor has
// a paragraph template, including with empty and garbled states.
func TestNarrativeEveryStep(t *testing.T) {
	steps := []string{governor.StepQuarantine, governor.StepSuspension, governor.StepTrustDecay, governor.StepContextualModifier,
		governor.StepReversibility, governor.StepDimensionEval, governor.StepCrossDimensional, governor.StepTier1,
		governor.StepUCSCompute, governor.StepUCSAdjustment, governor.StepReversibilityEscalation, governor.StepTier2,
		governor.StepTier3}
	if len(steps) != len(narrStepOrder) {
		t.Fatalf("narrStepOrder has %d steps, the governor %d", len(narrStepOrder), len(steps))
	}
	for i, name := range steps {
		if narrStepOrder[i] != name {
			t.Errorf("narrStepOrder[%d] = %q, want %q", i, narrStepOrder[i], name)
		}
		if _, ok := narrSteps[name]; !ok {
			t.Errorf("no narrative template for step %q", name)
		}
		for _, state := range []string{"", "null", "{}", "[]", `"x"`, `{"trust":"high","vetoes":{},"signals":[1,"a",null],"lowest":3}`, "{broken"} {
			e := &Entry{AgentID: "a", Sequence: 1, Pipeline: []Step{{Step: name, InputState: json.RawMessage(state), OutputState: json.RawMessage(state), DecidedVerdict: true}}}
			got := Narrative(e)
			checkNarrativeShape(t, got)
			if strings.Contains(got, narrUnknownStep) {
				t.Errorf("step %q with state %q fell back to the unknown-step template", name, state)
			}
			if !strings.Contains(got, "Step 1 — "+narrSteps[name].title+".") {
				t.Errorf("step %q with state %q: no labelled paragraph:\n%s", name, state, got)
			}
		}
	}
	// An unknown step is still narrated, with the fallback.
	got := Narrative(&Entry{Pipeline: []Step{{Step: "future_step", InputState: json.RawMessage(`{"a":1}`)}}})
	if !strings.Contains(got, narrUnknownStep) {
		t.Errorf("unknown step not narrated with the fallback:\n%s", got)
	}
}

// TestNarrativeDegenerate checks entries with missing or garbled members.
func TestNarrativeDegenerate(t *testing.T) {
	entries := []*Entry{
		{},
		{Verdict: Verdict{Decision: "MAYBE", Tier: 9}, Timestamp: "yesterday", ActionToPass: json.RawMessage(`[1,2]`), ContractSnapshot: json.RawMessage(`{"anchors":[1]}`)},
		{Verdict: Verdict{Decision: "DENY", Tier: 1, Vetoes: []string{"invariant:no\nnewline"}}, ActionToPass: json.RawMessage(`{"dimension_gaps":[{"dimension":"invariant:x"}]}`),
			Action:          Action{Type: "a\n\nb", Target: strings.Repeat("t", 1000), Parameters: map[string]any{"x": map[string]any{"y": []any{1.0, "z"}}, "n": nil}},
			CausalLinks:     []CausalLink{{Kind: "weird", Influence: 0.2}, {Kind: "resubmission", Influence: -0.05, Sequence: 4}},
			SemanticContext: governor.SemanticContext{InstructionContext: "do the refund", MatchedAnchorTerms: []string{"refund"}, PerTermDrift: map[string]float64{"refund": 0.25, "a": 0.1}}},
		{Verdict: Verdict{Decision: "MODIFY", Tier: 3}, ActionToPass: json.RawMessage(`{"ucs_needed":0.7,"gap":0.1}`)},
	}
	for i, e := range entries {
		got := Narrative(e)
		checkNarrativeShape(t, got)
		if i == 2 && strings.Contains(got, "a\n\nb") {
			t.Error("control characters of recorded strings leak into the text")
		}
	}
	if got := Narrative(nil); got == "" {
		t.Error("nil entry: empty narrative")
	}
	// Parameters beyond the tenth are summarised, in name order.
	p := map[string]any{}
	for i := range 12 {
		p["p"+strconv.Itoa(10+i)] = strings.Repeat("v", 200)
	}
	got := Narrative(&Entry{Action: Action{Type: "x", Parameters: p}})
	if !strings.Contains(got, "with 12 parameters: p10 = ") || !strings.Contains(got, "and 2 more parameters not listed here") || strings.Contains(got, "p20 =") {
		t.Errorf("parameter summary:\n%s", got)
	}
	if strings.Contains(got, strings.Repeat("v", 81)) {
		t.Error("long parameter values are not truncated")
	}
}

func TestNarrativeNumbers(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{0, "0"}, {-0.0001, "0"}, {1, "1"}, {0.5, "0.5"}, {0.6886227544910178, "0.689"}, {0.00498752080731768, "0.005"}, {16.7, "16.7"}, {-0.05, "-0.05"}, {900, "900"}} {
		if got := narrNum(c.f); got != c.want {
			t.Errorf("narrNum(%v) = %q, want %q", c.f, got, c.want)
		}
	}
	for _, c := range []struct {
		s    float64
		want string
	}{{0, "less than a second"}, {1, "1 second"}, {45, "45 seconds"}, {90, "1.5 minutes"}, {3600, "1 hour"}, {5000, "about 1.4 hours"}, {172800, "2 days"}} {
		if got := narrDuration(c.s); got != c.want {
			t.Errorf("narrDuration(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// FuzzNarrative decodes arbitrary JSON into an entry and narrates it: no
// panic, and the layout holds.
func FuzzNarrative(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"pipeline":[{"step":"tier3","input_state":{"ucs":"x"},"output_state":{"rule":"weak_dimension","verdict":"MODIFY"},"decided_verdict":true}]}`))
	f.Add([]byte(`{"verdict":{"decision":"ALLOW"},"action_to_pass":{"margin_to_deny":0.3,"closest_veto_dimension":{"dimension":"scope_compliance","score":1}}}`))
	f.Add([]byte(`{"pipeline":[{"step":"dimension_eval","input_state":[],"output_state":{"vetoes":[1,"invariant:x"],"lowest":{"dimension":2}}}],"dimension_scores":[{"dimension":"x_y","score":0.25,"veto":true}]}`))
	for _, name := range []string{"deny_authority", "modify_weak_dimension", "quarantined"} {
		if b, err := os.ReadFile(filepath.Join("..", "governor", "testdata", "golden", name+".json")); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Entry
		if json.Unmarshal(data, &e) != nil {
			return
		}
		checkNarrativeShape(t, Narrative(&e))
	})
}

// narrDiff shows the first lines where want and got differ.
func narrDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + a + "\n  got:  " + b + "\n")
			shown++
		}
	}
	return out.String()
}
