package test

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/test/redistest"
)

// ticketCreate is an action of support-bot that needs a human once
// "create" is listed in its human_override (see approvalsConfig).
const ticketCreate = `{"agent_id":"support-bot","action":{"type":"create","target":"api.example.com/tickets","parameters":{"subject":"refund"}}}`

// approvalsConfig is the quickstart with support-bot's creates held for a
// human.
func approvalsConfig(t *testing.T) string {
	t.Helper()
	cfg := strings.Replace(quickstart(t), "human_override: [delete]", "human_override: [delete, create]", 1)
	if !strings.Contains(cfg, "human_override: [delete, create]") {
		t.Fatal("quickstart.yaml no longer sets support-bot's human_override: [delete]")
	}
	return cfg
}

// TestApprovalSharedThroughRedis: two `vigil serve` processes on one Redis
// share the override queue: an escalation on b is approved on a, and b then
// lets the identical action pass once.
func TestApprovalSharedThroughRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary and redis-server")
	}
	rdb := redistest.Start(t)
	cfg := approvalsConfig(t)
	a := startServe(t, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "a"))
	b := startServe(t, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "b"), "--playground")

	status, out := b.post(t, "/v1/evaluate", "k-ops", ticketCreate)
	id, _ := out["approval_id"].(string)
	if status != http.StatusOK || out["decision"] != "ESCALATE" || !strings.HasPrefix(id, "apr_") {
		t.Fatalf("evaluate on b: got %d %v, want ESCALATE with an approval_id", status, out)
	}
	status, list := a.get(t, "/v1/approvals?status=pending", "k-view")
	approvals, _ := list["approvals"].([]any)
	if status != http.StatusOK || len(approvals) != 1 || approvals[0].(map[string]any)["id"] != id {
		t.Fatalf("pending on a: got %d %v, want [%s]", status, list, id)
	}
	// The CLI against the real server.
	listed, err := exec.Command(vigilBinary(t), "approvals", "list", "--status", "pending", "--server", a.base, "--api-key", "k-view").CombinedOutput()
	if err != nil || !strings.Contains(string(listed), id) {
		t.Errorf("vigil approvals list: %v\n%s\nwant a line for %s", err, listed, id)
	}

	status, out = a.post(t, "/v1/approvals/"+id+"/approve", "k-ops", `{"reason":"e2e"}`)
	if status != http.StatusOK || out["status"] != "approved" || out["decided_by"] != "alice@example.com" {
		t.Fatalf("approve on a: got %d %v, want approved by alice@example.com", status, out)
	}
	eventually(t, "b learns of the approval", func() bool {
		_, out := b.post(t, "/v1/playground/evaluate", "k-ops", ticketCreate)
		return out["decision"] == "ALLOW"
	})
	if _, out := b.post(t, "/v1/evaluate", "k-ops", ticketCreate); out["decision"] != "ALLOW" {
		t.Errorf("retry on b: got %v, want ALLOW", out)
	}
	if _, out := b.post(t, "/v1/evaluate", "k-ops", ticketCreate); out["decision"] != "ESCALATE" || out["approval_id"] == id {
		t.Errorf("second retry on b: got %v, want ESCALATE with a new approval", out)
	}
	status, out = b.post(t, "/v1/approvals/"+id+"/deny", "k-ops", "")
	if e, _ := out["error"].(map[string]any); status != http.StatusConflict || e["code"] != "conflict" {
		t.Errorf("deny after approve, on b: got %d %v, want 409 conflict", status, out)
	}
	status, prov := a.get(t, "/v1/provenance?context_code=CONTROL.APPROVAL_APPROVED&target="+id, "k-view")
	if events, _ := prov["events"].([]any); status != http.StatusOK || len(events) != 1 {
		t.Errorf("provenance: got %d %v, want one CONTROL.APPROVAL_APPROVED", status, prov)
	}
	a.stop(t)
	b.stop(t)
}
