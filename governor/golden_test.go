package governor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// goldenEngine is a fixed world: two agents, one rule, a clock that advances
// one second per reading, so every decision is reproducible.
func goldenEngine(t *testing.T) *Engine {
	t.Helper()
	now := time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	e, err := New(DefaultConfig(), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	contracts := []Contract{
		{AgentID: "support-bot", Archetype: "customer-experience", Team: "support",
			Scope: []string{"read", "create", "refund", "delete"}, Boundaries: []string{"api.example.com/*", "payments/*"},
			HumanOverride: []string{"delete"}, SensitiveTargets: []string{"payments/*"},
			Authority: []string{"!has(action.parameters.amount) || action.parameters.amount <= 500"},
			Limits:    Limits{ActionsPerMinute: 120, MaxConcurrent: 10, MaxCostPerAction: 100},
			Anchors:   map[string]string{"refund": "return a customer's payment for a damaged or missing order"}},
		{AgentID: "records-bot", Scope: []string{"update_record"}, SensitiveTargets: []string{"records/*"}},
	}
	for _, c := range contracts {
		if err := e.SetContract(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.SetRules([]Rule{{Name: "no-bulk-export", Expr: "action.type != 'export' || action.parameters.rows <= 1000", Message: "bulk export needs a human"}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestGoldenTraces keeps complete decisions for typical actions in
// testdata/golden, so that any change to a decision shows in review. Run
// `go test ./governor -run TestGoldenTraces -update` to accept a change.
func TestGoldenTraces(t *testing.T) {
	cases := []struct {
		name    string
		agent   string
		setup   func(e *Engine)
		action  Action
		context Context
		want    Verdict
	}{
		{name: "allow_read", agent: "support-bot",
			action: Action{ID: "act_golden_1", Type: "read", Target: "api.example.com/customers/42", Source: "api"}, want: Allow},
		{name: "deny_out_of_scope", agent: "support-bot",
			action: Action{ID: "act_golden_2", Type: "export", Target: "api.example.com/customers", Parameters: map[string]any{"rows": 5000.0}, Source: "api"}, want: Deny},
		{name: "deny_authority", agent: "support-bot",
			action:  Action{ID: "act_golden_3", Type: "refund", Target: "payments/orders/42", Parameters: map[string]any{"amount": 900.0}, Source: "api"},
			context: Context{Instruction: "Refund the damaged order", Origin: "user_request"}, want: Deny},
		{name: "escalate_human_override", agent: "support-bot",
			action: Action{ID: "act_golden_4", Type: "delete", Target: "api.example.com/customers/42", Parameters: map[string]any{"reason": "gdpr"}, Source: "api"}, want: Escalate},
		{name: "escalate_irreversible_tier3", agent: "support-bot",
			action:  Action{ID: "act_golden_5", Type: "refund", Target: "payments/orders/42", Parameters: map[string]any{"amount": 80.0}, Source: "api"},
			context: Context{Instruction: "refund the damaged order", Origin: "user_request"}, want: Escalate},
		{name: "quarantined", agent: "support-bot",
			setup: func(e *Engine) {
				e.SetOverlays(Overlays{"support-bot": {Quarantined: true, Directives: []string{"dir_golden"}}})
			},
			action: Action{ID: "act_golden_6", Type: "read", Target: "api.example.com/customers/42", Source: "api"}, want: Escalate},
		{name: "modify_weak_dimension", agent: "records-bot",
			// Ten payment approvals, each held for a human (trust stays 0.5),
			// then a delete that a route rule declares compensable, on a
			// sensitive target, with no constitutional rules in force.
			setup: func(e *Engine) {
				must(e.SetRules(nil))
				must(e.SetContract(Contract{AgentID: "records-bot", HumanOverride: []string{"approve_payment"},
					SensitiveTargets: []string{"records/*"}, Limits: Limits{MaxConcurrent: 2}}))
				for i := range 10 {
					_, err := e.Evaluate(Request{AgentID: "records-bot", Action: Action{ID: "act_setup_" + itoa(i), Type: "approve_payment", Target: "payments/7", Parameters: map[string]any{"amount": 10.0}}})
					must(err)
				}
				must(e.CallStarted("records-bot"))
			},
			action: Action{ID: "act_golden_7", Type: "delete_record", Target: "records/customer/7", Source: "proxy", Method: "DELETE", Reversibility: Compensable},
			want:   Modify},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := goldenEngine(t)
			if tc.setup != nil {
				tc.setup(e)
			}
			d, err := e.Evaluate(Request{AgentID: tc.agent, Action: tc.action, Context: tc.context})
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != tc.want {
				t.Errorf("verdict: got %v, want %v (%s)", d.Verdict, tc.want, d.Reasoning)
			}
			got, err := json.MarshalIndent(d, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", tc.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("decision differs from %s (run with -update to accept):\n%s", path, diffLines(string(want), string(got)))
			}
		})
	}
}

// diffLines shows the first lines where want and got differ.
func diffLines(want, got string) string {
	w, g := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	var out bytes.Buffer
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var a, b []byte
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if !bytes.Equal(a, b) {
			out.WriteString("line ")
			out.WriteString(itoa(i + 1))
			out.WriteString(":\n  want: " + string(a) + "\n  got:  " + string(b) + "\n")
			shown++
		}
	}
	return out.String()
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func itoa(i int) string { return ftoa(float64(i)) }
