package test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/test/redistest"
)

// del sends DELETE path with key and decodes the JSON answer.
func (s *server) del(t testing.TB, path, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.base+path, nil)
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("DELETE %s: body is not JSON: %v", path, err)
	}
	return resp.StatusCode, out
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: got %v, want status 0\n%s", err, s.stderr.String())
		}
		s.done <- nil // for the cleanup
	case <-time.After(35 * time.Second):
		t.Fatalf("no exit within 35 s of SIGTERM\n%s", s.stderr.String())
	}
}

const supportRead = `{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/customers/42"}}`

// decision evaluates supportRead and returns the verdict.
func (s *server) decision(t *testing.T) string {
	t.Helper()
	status, out := s.post(t, "/v1/evaluate", "k-ops", supportRead)
	if status != http.StatusOK {
		t.Fatalf("evaluate: got %d %v", status, out)
	}
	d, _ := out["decision"].(string)
	return d
}

// TestQuarantineSurvivesRestart: a quarantine issued through the API holds
// the agent (ESCALATE) in this process and, persisted in the data
// directory, in the next one; DELETE frees the agent, and that too
// survives a kill -9.
func TestQuarantineSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	cfg := quickstart(t)
	data := filepath.Join(t.TempDir(), "data")

	s := startServeIn(t, data, cfg)
	status, info := s.get(t, "/v1/info", "k-view")
	features, _ := info["features"].([]any)
	if status != http.StatusOK || info["control_plane_enabled"] != true || !slices.Contains(features, any("control_plane")) {
		t.Errorf("info: got %d %v, want control_plane_enabled and the control_plane feature", status, info)
	}
	if got := s.decision(t); got != "ALLOW" {
		t.Fatalf("before the quarantine: got %s, want ALLOW", got)
	}
	status, out := s.post(t, "/v1/control/directives", "k-ops",
		`{"type":"quarantine","target":{"agent_ids":["support-bot"]},"reason":"e2e"}`)
	if status != http.StatusCreated || out["success"] != true {
		t.Fatalf("issue: got %d %v, want 201 success", status, out)
	}
	d, _ := out["directive"].(map[string]any)
	id, _ := d["id"].(string)
	if !strings.HasPrefix(id, "dir_") || d["operator"] != "alice@example.com" {
		t.Fatalf("directive: got %v, want an id and operator alice@example.com", d)
	}
	if got := s.decision(t); got != "ESCALATE" {
		t.Errorf("quarantined: got %s, want ESCALATE", got)
	}
	if _, err := os.Stat(filepath.Join(data, "controlplane")); err != nil {
		t.Errorf("control plane store: %v, want DATA_DIR/controlplane", err)
	}
	s.stop(t)

	s = startServeIn(t, data, cfg)
	if got := s.decision(t); got != "ESCALATE" {
		t.Errorf("after a restart: got %s, want ESCALATE (the quarantine is persisted)", got)
	}
	// The CLI against the real server.
	list, err := exec.Command(vigilBinary(t), "control", "list", "--server", s.base, "--api-key", "k-view").CombinedOutput()
	if err != nil || !strings.Contains(string(list), id) || !strings.Contains(string(list), "support-bot") {
		t.Errorf("vigil control list: %v\n%s\nwant a line for %s", err, list, id)
	}
	status, out = s.del(t, "/v1/control/directives/"+id, "k-ops")
	if d, _ := out["directive"].(map[string]any); status != http.StatusOK || out["success"] != true || d["status"] != "expired" {
		t.Fatalf("delete: got %d %v, want 200 and status expired", status, out)
	}
	if got := s.decision(t); got != "ALLOW" {
		t.Errorf("after DELETE: got %s, want ALLOW", got)
	}
	status, prov := s.get(t, "/v1/provenance?target="+id, "k-view")
	events, _ := prov["events"].([]any)
	if status != http.StatusOK || len(events) != 2 {
		t.Fatalf("provenance: got %d %v, want the issue and the expiry", status, prov)
	}
	if e, _ := events[1].(map[string]any); e["context_code"] != "CONTROL.DIRECTIVE_ISSUED" || e["actor"] != "alice@example.com" || e["actor_type"] != "operator" {
		t.Errorf("issued event: got %v", e)
	}
	if err := s.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown at all
		t.Fatal(err)
	}
	<-s.done
	s.done <- nil

	s = startServeIn(t, data, cfg)
	if got := s.decision(t); got != "ALLOW" {
		t.Errorf("after kill -9: got %s, want ALLOW (the expiry is persisted)", got)
	}
	if status, out := s.get(t, "/v1/control/directives/"+id, "k-view"); status != http.StatusOK || out["status"] != "expired" {
		t.Errorf("directive after kill -9: got %d %v, want it expired", status, out)
	}
	s.stop(t)
}

// TestControlPlaneDisabledE2E: with runtime.enable_control_plane false the
// directive routes say so, nothing is stored, and evaluation is unchanged.
func TestControlPlaneDisabledE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	cfg := strings.Replace(quickstart(t), "enable_control_plane: true", "enable_control_plane: false", 1)
	if !strings.Contains(cfg, "enable_control_plane: false") {
		t.Fatal("quickstart.yaml no longer sets enable_control_plane: true")
	}
	data := filepath.Join(t.TempDir(), "data")
	s := startServeIn(t, data, cfg)
	if _, info := s.get(t, "/v1/info", "k-view"); info["control_plane_enabled"] != false {
		t.Errorf("info: got %v, want control_plane_enabled false", info)
	}
	status, out := s.post(t, "/v1/control/directives", "k-ops", `{"type":"quarantine","target":{"agent_ids":["support-bot"]}}`)
	e, _ := out["error"].(map[string]any)
	if status != http.StatusConflict || out["success"] != false || e["code"] != "control_plane_disabled" {
		t.Errorf("issue: got %d %v, want 409 success false control_plane_disabled", status, out)
	}
	if status, out := s.get(t, "/v1/control/directives", "k-view"); status != http.StatusOK || len(out["directives"].([]any)) != 0 {
		t.Errorf("list: got %d %v, want 200 and no directives", status, out)
	}
	if got := s.decision(t); got != "ALLOW" {
		t.Errorf("evaluate: got %s, want ALLOW", got)
	}
	if _, err := os.Stat(filepath.Join(data, "controlplane")); !os.IsNotExist(err) {
		t.Errorf("control plane store: got %v, want no DATA_DIR/controlplane", err)
	}
	s.stop(t)
}

// TestDirectiveSharedThroughRedis: two `vigil serve` processes on one Redis
// share directives: a quarantine issued on one holds the agent on the
// other, and DELETE on the other frees it on both.
func TestDirectiveSharedThroughRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary and redis-server")
	}
	rdb := redistest.Start(t)
	cfg := quickstart(t)
	dataA := filepath.Join(t.TempDir(), "a")
	a := startServe(t, cfg, "--redis-url", rdb.URL(), "--data-dir", dataA)
	b := startServe(t, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "b"))

	status, out := a.post(t, "/v1/control/directives", "k-ops", `{"type":"quarantine","target":{"agent_ids":["support-bot"]}}`)
	if status != http.StatusCreated {
		t.Fatalf("issue on a: got %d %v", status, out)
	}
	id, _ := out["directive"].(map[string]any)["id"].(string)
	eventually(t, "b sees the quarantine", func() bool { return b.decision(t) == "ESCALATE" })
	if status, out := b.del(t, "/v1/control/directives/"+id, "k-ops"); status != http.StatusOK {
		t.Fatalf("delete on b: got %d %v", status, out)
	}
	eventually(t, "a sees the expiry", func() bool { return a.decision(t) == "ALLOW" })
	if _, err := os.Stat(filepath.Join(dataA, "controlplane")); !os.IsNotExist(err) {
		t.Errorf("embedded control plane store with Redis: got %v, want none", err)
	}
	a.stop(t)
	b.stop(t)
}

// eventually polls cond for up to 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
