package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

func TestConversionsWriteEmptyListsNotNull(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"evaluation", wire.NewEvaluation(&governor.Decision{Verdict: governor.Allow}, nil)},
		{"agent", wire.NewAgent(governor.AgentStatus{AgentID: "a"})},
		{"contract", wire.NewContract(governor.Contract{AgentID: "a"})},
		{"archetype", wire.NewArchetype(governor.Archetype{Name: "x", Prior: &governor.Prior{Name: "x"}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			s := string(b)
			for _, nullable := range []string{`"ledger":null`, `"last_evaluation":null`} {
				s = strings.Replace(s, nullable, "", 1)
			}
			if strings.Contains(s, ":null") {
				t.Errorf("json: got %s, want null only for the nullable fields", b)
			}
		})
	}
}

func TestContractRoundTrip(t *testing.T) {
	in := governor.Contract{
		AgentID: "a", Archetype: "analytics", Team: "t", Scope: []string{"read"}, Boundaries: []string{"x/*"},
		HumanOverride: []string{"delete"}, SensitiveTargets: []string{"p/*"}, Authority: []string{"true"},
		TimeWindows: map[string]governor.TimeWindow{"deploy": {StartHour: 9, EndHour: 17, Timezone: "UTC", MinIntervalSeconds: 30}},
		Limits:      governor.Limits{ActionsPerMinute: 1, MaxConcurrent: 2, MaxCostPerAction: 3.5},
		Anchors:     map[string]string{"refund": "give money back"},
	}
	out := wire.NewContract(in).ToGovernor("a")
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(out)
	if string(a) != string(b) {
		t.Errorf("round trip: got %s, want %s", b, a)
	}
}

func TestEvaluateRequestToGovernor(t *testing.T) {
	r := wire.EvaluateRequest{
		AgentID: "a",
		Action:  &wire.ActionRequest{Type: "read", Target: "x", Parameters: map[string]any{"n": 1.0}},
		Context: &wire.ContextRequest{Instruction: "i", Origin: "user_request", DelegationDepth: 2},
	}
	got := r.ToGovernor("api")
	if got.AgentID != "a" || got.Action.Type != "read" || got.Action.Target != "x" || got.Action.Source != "api" ||
		got.Action.Parameters["n"] != 1.0 || got.Context.Origin != "user_request" || got.Context.DelegationDepth != 2 || got.DryRun {
		t.Errorf("ToGovernor: got %+v, want the request's fields with source api", got)
	}
	r.Action.Parameters["n"] = 2.0
	if got.Action.Parameters["n"] != 1.0 {
		t.Errorf("ToGovernor: got parameters aliased to the request, want a copy")
	}
}
