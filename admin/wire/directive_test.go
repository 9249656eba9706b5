package wire_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
)

func TestDirectiveJSON(t *testing.T) {
	issued := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name string
		d    controlplane.Directive
		want string
	}{
		{"quarantine without a duration",
			controlplane.Directive{ID: "dir_1", Type: controlplane.Quarantine, Operator: "op", Target: controlplane.Target{Team: "t"},
				Status: controlplane.StatusActive, IssuedAt: issued},
			`{"id":"dir_1","type":"quarantine","operator":"op","reason":"","target":{"agent_ids":[],"archetype":"","team":"t","drift_status":""},` +
				`"parameters":{},"duration_seconds":null,"status":"active","issued_at":"2026-03-01T12:00:00.123Z","expires_at":null,` +
				`"expired_at":null,"resolved_agents":[],"released_agents":[]}`},
		{"tighten with a duration, partly released",
			controlplane.Directive{ID: "dir_2", Type: controlplane.Tighten, Operator: "op", Target: controlplane.Target{AgentIDs: []string{"a", "b"}},
				Parameters: controlplane.Parameters{Factor: 0.5}, Duration: 90 * time.Second, Status: controlplane.StatusActive,
				IssuedAt: issued, ExpiresAt: issued.Add(90 * time.Second), ResolvedAgents: []string{"a", "b"}, Released: []string{"b"}},
			`{"id":"dir_2","type":"tighten","operator":"op","reason":"","target":{"agent_ids":["a","b"],"archetype":"","team":"","drift_status":""},` +
				`"parameters":{"factor":0.5},"duration_seconds":90,"status":"active","issued_at":"2026-03-01T12:00:00.123Z",` +
				`"expires_at":"2026-03-01T12:01:30.123Z","expired_at":null,"resolved_agents":["a","b"],"released_agents":["b"]}`},
		{"enforce, expired",
			controlplane.Directive{ID: "dir_3", Type: controlplane.Enforce, Operator: "op", Reason: "r", Target: controlplane.Target{Archetype: "x"},
				Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: "n", Expr: "true"}}},
				Status:     controlplane.StatusExpired, IssuedAt: issued, ExpiredAt: issued.Add(time.Second)},
			`{"id":"dir_3","type":"enforce","operator":"op","reason":"r","target":{"agent_ids":[],"archetype":"x","team":"","drift_status":""},` +
				`"parameters":{"invariants":[{"name":"n","expr":"true","message":""}]},"duration_seconds":null,"status":"expired",` +
				`"issued_at":"2026-03-01T12:00:00.123Z","expires_at":null,"expired_at":"2026-03-01T12:00:01.123Z","resolved_agents":[],"released_agents":[]}`},
		{"re_anchor and broadcast_reminder keep only their own parameter",
			controlplane.Directive{ID: "dir_4", Type: controlplane.ReAnchor, Parameters: controlplane.Parameters{Term: "refund", Message: "stray"},
				IssuedAt: issued},
			`"parameters":{"term":"refund"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(wire.NewDirective(tt.d))
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("json:\n got %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestDirectiveRequestToControlPlane(t *testing.T) {
	var r wire.DirectiveRequest
	body := `{"type":"enforce","target":{"agent_ids":["a"],"team":"t"},"reason":"why","duration_seconds":60,` +
		`"parameters":{"invariants":[{"name":"n","expr":"true","message":"m"}],"term":"x"},"operator":"ignored"}`
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	got := r.ToControlPlane("op", time.Minute)
	if got.Type != "enforce" || got.Operator != "op" || got.Reason != "why" || got.Duration != time.Minute ||
		len(got.Target.AgentIDs) != 1 || got.Target.Team != "t" || len(got.Parameters.Invariants) != 1 ||
		got.Parameters.Invariants[0].Message != "m" || got.Parameters.Term != "x" {
		t.Errorf("ToControlPlane: got %+v", got)
	}
	if err := got.Validate(); err == nil || !strings.Contains(err.Error(), "parameters.term") {
		t.Errorf("Validate: got %v, want the stray term refused", err)
	}
}

func TestProvenanceDetailsNeverNull(t *testing.T) {
	b, err := json.Marshal(wire.NewProvenanceList([]controlplane.Event{{ID: "evt_1", Timestamp: time.Unix(0, 0)}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"events":[{"id":"evt_1","timestamp":"1970-01-01T00:00:00.000Z","actor":"","actor_type":"","target":"","context_code":"","reason":"","details":{}}]}`; string(b) != want {
		t.Errorf("json:\n got %s\nwant %s", b, want)
	}
	if b, _ := json.Marshal(wire.NewProvenanceList(nil)); string(b) != `{"events":[]}` {
		t.Errorf("empty: got %s, want {\"events\":[]}", b)
	}
}
