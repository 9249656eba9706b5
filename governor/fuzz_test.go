package governor

import (
	"encoding/json"
	"testing"
)

// FuzzEvaluate: arbitrary action types, targets, parameters and instructions
// never panic, always yield a verdict, and always have exactly one deciding
// step, the last one.
func FuzzEvaluate(f *testing.F) {
	f.Add("read", "api.example.com/customers/42", `{"amount": 80}`, "refund the order", "user_request")
	f.Add("", "", ``, "", "")
	f.Add("delete", "payments/*", `{"cost": 1e308, "amount": "x"}`, "REFUND refunded refund", "agent_initiated")
	f.Add("transfer\x00", "../../etc", `{"nested": {"a": [1, 2, {"b": null}]}}`, "\xff\xfe", "escalation_received")
	f.Add("export", "x", `{"rows": 5000}`, "", "")
	e, err := New(DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	must(e.SetContract(Contract{AgentID: "fuzz", Archetype: "customer-experience", Scope: []string{"read", "refund", "delete"},
		Boundaries: []string{"api.example.com/*", "payments/*"}, HumanOverride: []string{"delete"}, SensitiveTargets: []string{"payments/*"},
		Authority: []string{"!has(action.parameters.amount) || action.parameters.amount <= 500"},
		Limits:    Limits{MaxConcurrent: 10, MaxCostPerAction: 100}, Anchors: map[string]string{"refund": "give money back"},
		TimeWindows: map[string]TimeWindow{"delete": {StartHour: 22, EndHour: 6, MinIntervalSeconds: 5}}}))
	must(e.SetRules([]Rule{{Name: "no-bulk-export", Expr: "action.type != 'export' || action.parameters.rows <= 1000", Message: "bulk"}}))
	f.Fuzz(func(t *testing.T, typ, target, params, instruction, origin string) {
		var p map[string]any
		_ = json.Unmarshal([]byte(params), &p)
		for _, dry := range []bool{true, false} {
			d, err := e.Evaluate(Request{AgentID: "fuzz", DryRun: dry,
				Action:  Action{Type: typ, Target: target, Parameters: p},
				Context: Context{Instruction: instruction, Origin: origin}})
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if d.Verdict < Allow || d.Verdict > Suspend {
				t.Fatalf("no verdict: %v", d.Verdict)
			}
			decided := 0
			for _, s := range d.Pipeline {
				if s.Decided {
					decided++
				}
			}
			if decided != 1 || !d.Pipeline[len(d.Pipeline)-1].Decided {
				t.Fatalf("got %d deciding steps (last decided: %v), want exactly one, the last", decided, d.Pipeline[len(d.Pipeline)-1].Decided)
			}
			if d.UCS < 0 || d.UCS > 1 {
				t.Fatalf("UCS %v outside [0, 1]", d.UCS)
			}
			if _, err := json.Marshal(d); err != nil {
				t.Fatalf("decision does not marshal: %v", err)
			}
		}
	})
}
