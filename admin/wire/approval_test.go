package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
)

func TestApprovalJSON(t *testing.T) {
	created := time.Date(2026, time.January, 2, 15, 4, 5, 123456789, time.UTC)
	pending := controlplane.Approval{ID: "apr_1", AgentID: "a1", Digest: "d", Reason: "held", Status: controlplane.ApprovalPending,
		CreatedAt: created, ExpiresAt: created.Add(10 * time.Minute)}
	pending.Action.Type, pending.Action.Target = "export", "reports/7"
	approved := pending.Clone()
	approved.Status, approved.DecidedAt, approved.DecidedBy, approved.DecisionReason = controlplane.ApprovalApproved, created.Add(time.Minute), "alice", "ok"
	approved.Ledger = &controlplane.LedgerRef{AgentID: "a1", Sequence: 3}
	approved.Action.Parameters = map[string]any{"format": "csv"}
	cases := []struct {
		name string
		in   controlplane.Approval
		want string
	}{
		{"pending", pending, `{"id":"apr_1","agent_id":"a1","action":{"type":"export","target":"reports/7","parameters":{}},"digest":"d",` +
			`"reason":"held","status":"pending","created_at":"2026-01-02T15:04:05.123Z","expires_at":"2026-01-02T15:14:05.123Z",` +
			`"decided_at":null,"decided_by":null,"decision_reason":"","ledger":null}`},
		{"approved", approved, `{"id":"apr_1","agent_id":"a1","action":{"type":"export","target":"reports/7","parameters":{"format":"csv"}},"digest":"d",` +
			`"reason":"held","status":"approved","created_at":"2026-01-02T15:04:05.123Z","expires_at":"2026-01-02T15:14:05.123Z",` +
			`"decided_at":"2026-01-02T15:05:05.123Z","decided_by":"alice","decision_reason":"ok","ledger":{"agent_id":"a1","sequence":3}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(wire.NewApproval(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
	if b, _ := json.Marshal(wire.NewApprovalList(nil)); string(b) != `{"approvals":[]}` {
		t.Errorf("empty list: got %s, want {\"approvals\":[]}", b)
	}
	// The conversion copies: the wire value does not alias the parameters.
	w := wire.NewApproval(approved)
	w.Action.Parameters["format"] = "xml"
	if approved.Action.Parameters["format"] != "csv" {
		t.Errorf("NewApproval aliases the action's parameters")
	}
}
