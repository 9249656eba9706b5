package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// reportBot's exports always need a human (human_override), and pass once
// approved.
func reportBot() governor.Contract {
	return governor.Contract{AgentID: "report-bot", Scope: []string{"*"}, HumanOverride: []string{"export"}}
}

const exportBody = `{"agent_id": "report-bot", "action": {"type": "export", "target": "api.example.com/reports/7", "parameters": {"format": "csv"}}}`

// approvalsFixture is a server with a ledger, a control plane and the
// override queue, over one memory store.
type approvalsFixture struct {
	srv   *httptest.Server
	store *controlplane.MemoryStore
	q     *controlplane.Approvals
}

func newApprovalsFixture(t *testing.T, playground bool) approvalsFixture {
	t.Helper()
	eng := newEngine(t, reportBot(), supportBot())
	store := controlplane.NewMemoryStore()
	plane, err := controlplane.New(controlplane.DefaultConfig(), eng, eng, store)
	if err != nil {
		t.Fatalf("controlplane.New: %v", err)
	}
	q, err := controlplane.NewApprovals(controlplane.ApprovalConfig{}, store, store, eng)
	if err != nil {
		t.Fatalf("NewApprovals: %v", err)
	}
	led, _ := newFileLedger(t)
	srv := newServer(t, admin.Options{Governor: eng, Control: plane, Approvals: q, Ledger: led, Playground: playground})
	return approvalsFixture{srv: srv, store: store, q: q}
}

func (f approvalsFixture) evaluate(t *testing.T, body string) wire.Evaluation {
	t.Helper()
	res := call(t, f.srv, http.MethodPost, "/v1/evaluate", keyOperator, body)
	if res.status != http.StatusOK {
		t.Fatalf("evaluate: got %d %s, want 200", res.status, res.body)
	}
	var ev wire.Evaluation
	res.decode(t, &ev)
	return ev
}

// escalate evaluates the export and returns its approval id.
func (f approvalsFixture) escalate(t *testing.T) (wire.Evaluation, string) {
	t.Helper()
	ev := f.evaluate(t, exportBody)
	if ev.Decision != "ESCALATE" || ev.ApprovalID == "" {
		t.Fatalf("export: got %s with approval_id %q, want ESCALATE with an approval", ev.Decision, ev.ApprovalID)
	}
	return ev, ev.ApprovalID
}

func (f approvalsFixture) decide(t *testing.T, id, verb, key, body string) response {
	t.Helper()
	return call(t, f.srv, http.MethodPost, "/v1/approvals/"+id+"/"+verb, key, body)
}

func (f approvalsFixture) list(t *testing.T, query string) []wire.Approval {
	t.Helper()
	res := call(t, f.srv, http.MethodGet, "/v1/approvals"+query, keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("GET /v1/approvals%s: got %d %s", query, res.status, res.body)
	}
	var l wire.ApprovalList
	res.decode(t, &l)
	return l.Approvals
}

func TestEvaluateEscalateRequestsApproval(t *testing.T) {
	f := newApprovalsFixture(t, true)
	ev, id := f.escalate(t)
	as := f.list(t, "?status=pending")
	if len(as) != 1 || as[0].ID != id {
		t.Fatalf("pending approvals: got %+v, want [%s]", as, id)
	}
	a := as[0]
	if a.AgentID != "report-bot" || a.Action.Type != "export" || a.Action.Target != "api.example.com/reports/7" || a.Action.Parameters["format"] != "csv" {
		t.Errorf("approval action: got %s %+v", a.AgentID, a.Action)
	}
	if a.Status != "pending" || a.Reason != ev.Reasoning || a.DecidedAt != nil || a.DecidedBy != nil || a.ExpiresAt == nil {
		t.Errorf("approval: got %+v, want pending with the decision's reasoning", a)
	}
	if a.Ledger == nil || ev.Ledger == nil || *a.Ledger != *ev.Ledger {
		t.Errorf("approval ledger: got %+v, want the evaluation's %+v", a.Ledger, ev.Ledger)
	}
	act := governor.Action{Type: "export", Target: "api.example.com/reports/7", Parameters: map[string]any{"format": "csv"}}
	if want := governor.ActionDigest("report-bot", &act); a.Digest != want {
		t.Errorf("digest: got %s, want %s", a.Digest, want)
	}

	// Other verdicts, and the playground, request nothing, and say nothing.
	res := call(t, f.srv, http.MethodPost, "/v1/evaluate", keyOperator,
		`{"agent_id": "support-bot", "action": {"type": "read", "target": "api.example.com/orders/1"}}`)
	var raw map[string]json.RawMessage
	res.decode(t, &raw)
	if _, ok := raw["approval_id"]; ok {
		t.Errorf("an ALLOW: got approval_id %s, want none", raw["approval_id"])
	}
	res = call(t, f.srv, http.MethodPost, "/v1/playground/evaluate", keyOperator, exportBody)
	raw = nil
	res.decode(t, &raw)
	if _, ok := raw["approval_id"]; ok || string(raw["decision"]) != `"ESCALATE"` {
		t.Errorf("playground: got decision %s approval_id %s, want ESCALATE and none", raw["decision"], raw["approval_id"])
	}
	if n := len(f.list(t, "")); n != 1 {
		t.Errorf("approvals: got %d, want only the evaluate's", n)
	}
}

func TestApproveAllowsTheRetryOnce(t *testing.T) {
	f := newApprovalsFixture(t, false)
	_, id := f.escalate(t)
	res := f.decide(t, id, "approve", keyOperator, `{"reason": "checked with the customer"}`)
	if res.status != http.StatusOK {
		t.Fatalf("approve: got %d %s, want 200", res.status, res.body)
	}
	var a wire.Approval
	res.decode(t, &a)
	if a.ID != id || a.Status != "approved" || a.DecidedBy == nil || *a.DecidedBy != "alice@example.com" ||
		a.DecisionReason != "checked with the customer" || a.DecidedAt == nil || a.ExpiresAt == nil {
		t.Errorf("approve: got %+v, want approved by alice@example.com", a)
	}
	if ev := f.evaluate(t, exportBody); ev.Decision != "ALLOW" || ev.ApprovalID != "" {
		t.Errorf("retry after approval: got %s (%s) approval_id %q, want ALLOW", ev.Decision, ev.Reasoning, ev.ApprovalID)
	}
	if ev := f.evaluate(t, exportBody); ev.Decision != "ESCALATE" || ev.ApprovalID == "" || ev.ApprovalID == id {
		t.Errorf("second retry: got %s approval_id %q, want ESCALATE with a new approval", ev.Decision, ev.ApprovalID)
	}
	for _, verb := range []string{"approve", "deny"} {
		body := f.decide(t, id, verb, keyOperator, "").wantError(t, http.StatusConflict, "conflict")
		if !strings.Contains(body.Message, "already approved") {
			t.Errorf("%s of an approved approval: got message %q", verb, body.Message)
		}
	}
	evs, err := f.store.Events(context.Background(), controlplane.EventFilter{ContextCode: controlplane.CodeApprovalApproved})
	if err != nil || len(evs) != 1 || evs[0].Actor != "alice@example.com" || evs[0].Target != id {
		t.Errorf("provenance: got %+v, %v; want one CONTROL.APPROVAL_APPROVED by alice for %s", evs, err, id)
	}
}

func TestDenyKeepsEscalating(t *testing.T) {
	f := newApprovalsFixture(t, false)
	_, id := f.escalate(t)
	res := f.decide(t, id, "deny", keyOperator, "") // no body
	if res.status != http.StatusOK {
		t.Fatalf("deny: got %d %s, want 200", res.status, res.body)
	}
	var a wire.Approval
	res.decode(t, &a)
	if a.Status != "denied" || a.ExpiresAt != nil || a.DecisionReason != "" {
		t.Errorf("deny: got %+v, want denied without expiry", a)
	}
	if ev := f.evaluate(t, exportBody); ev.Decision != "ESCALATE" {
		t.Errorf("retry after a denial: got %s, want ESCALATE", ev.Decision)
	}
	f.decide(t, id, "approve", keyOperator, "{}").wantError(t, http.StatusConflict, "conflict")
	if got := f.list(t, "?status=denied"); len(got) != 1 || got[0].ID != id {
		t.Errorf("denied approvals: got %+v, want [%s]", got, id)
	}
}

func TestApprovalRoutesErrors(t *testing.T) {
	f := newApprovalsFixture(t, false)
	_, id := f.escalate(t)
	f.decide(t, "apr_nope", "approve", keyOperator, "").wantError(t, http.StatusNotFound, "not_found")
	f.decide(t, id, "approve", keyViewer, "").wantError(t, http.StatusForbidden, "forbidden")
	f.decide(t, id, "approve", "", "").wantError(t, http.StatusUnauthorized, "unauthenticated")
	call(t, f.srv, http.MethodGet, "/v1/approvals", "", "").wantError(t, http.StatusUnauthorized, "unauthenticated")
	e := f.decide(t, id, "deny", keyOperator, `{"reason": "x", "operator": "mallory"}`).wantError(t, http.StatusForbidden, "forbidden")
	if e.Details["field"] != "operator" {
		t.Errorf("a foreign operator: got details %v, want field operator", e.Details)
	}
	e = f.decide(t, id, "deny", keyOperator, `{"reasons": "x"}`).wantError(t, http.StatusBadRequest, "invalid_request")
	if e.Details["field"] != "reasons" {
		t.Errorf("an unknown field: got details %v, want field reasons", e.Details)
	}
	f.decide(t, id, "deny", keyOperator, `{"reason": 3}`).wantError(t, http.StatusBadRequest, "invalid_request")
	f.decide(t, id, "deny", keyOperator, `[]`).wantError(t, http.StatusBadRequest, "invalid_request")
	for _, q := range []string{"?status=open", "?status=", "?status=PENDING", "?limit=0", "?limit=x"} {
		e := call(t, f.srv, http.MethodGet, "/v1/approvals"+q, keyViewer, "").wantError(t, http.StatusBadRequest, "invalid_request")
		if field := e.Details["field"]; field != "status" && field != "limit" {
			t.Errorf("GET /v1/approvals%s: got details %v, want the field", q, e.Details)
		}
	}
	// Still pending after all that; an admin may decide for another.
	res := f.decide(t, id, "approve", keyAdmin, `{"operator": "carol"}`)
	var a wire.Approval
	res.decode(t, &a)
	if res.status != http.StatusOK || a.DecidedBy == nil || *a.DecidedBy != "carol" {
		t.Errorf("admin approving for carol: got %d %+v", res.status, a)
	}
}

func TestListApprovalsFilters(t *testing.T) {
	f := newApprovalsFixture(t, false)
	var ids []string
	for range 4 {
		_, id := f.escalate(t)
		ids = append(ids, id)
	}
	if res := f.decide(t, ids[0], "approve", keyOperator, ""); res.status != http.StatusOK {
		t.Fatalf("approve: %d %s", res.status, res.body)
	}
	if res := f.decide(t, ids[1], "deny", keyOperator, ""); res.status != http.StatusOK {
		t.Fatalf("deny: %d %s", res.status, res.body)
	}
	idsOf := func(as []wire.Approval) []string {
		out := []string{}
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	newestFirst := slices.Clone(ids)
	slices.Reverse(newestFirst)
	cases := []struct {
		query string
		want  []string
	}{
		{"", newestFirst},
		{"?limit=2", newestFirst[:2]},
		{"?limit=99999", newestFirst},
		{"?status=pending", []string{ids[3], ids[2]}},
		{"?status=approved", []string{ids[0]}},
		{"?status=denied", []string{ids[1]}},
		{"?status=expired", []string{}},
		{"?status=pending&limit=1", []string{ids[3]}},
	}
	for _, tc := range cases {
		if got := idsOf(f.list(t, tc.query)); !slices.Equal(got, tc.want) {
			t.Errorf("GET /v1/approvals%s: got %v, want %v", tc.query, got, tc.want)
		}
	}
	res := call(t, f.srv, http.MethodGet, "/v1/approvals?status=expired", keyViewer, "")
	if got := strings.TrimSpace(string(res.body)); got != `{"approvals":[]}` {
		t.Errorf("empty list: got %s, want {\"approvals\":[]}", got)
	}
}

func TestApprovalsAbsent(t *testing.T) {
	srv := newServer(t, admin.Options{Governor: newEngine(t, reportBot())})
	res := call(t, srv, http.MethodGet, "/v1/approvals", keyViewer, "")
	if res.status != http.StatusOK || strings.TrimSpace(string(res.body)) != `{"approvals":[]}` {
		t.Errorf("list without approvals: got %d %s, want 200 {\"approvals\":[]}", res.status, res.body)
	}
	call(t, srv, http.MethodPost, "/v1/approvals/apr_x/approve", keyOperator, "").wantError(t, http.StatusConflict, "control_plane_disabled")
	res = call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator, exportBody)
	var raw map[string]json.RawMessage
	res.decode(t, &raw)
	if _, ok := raw["approval_id"]; ok || string(raw["decision"]) != `"ESCALATE"` {
		t.Errorf("evaluate without approvals: got decision %s approval_id %s, want ESCALATE without one", raw["decision"], raw["approval_id"])
	}
}
