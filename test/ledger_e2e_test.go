package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func (s *server) get(t testing.TB, path, key string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("GET %s: body is not JSON: %v", path, err)
	}
	return resp.StatusCode, out
}

// startServeIn is startServe with a fixed data directory, so a second
// process can reopen what the first wrote.
func startServeIn(t testing.TB, dataDir, config string) *server {
	t.Helper()
	return startServe(t, config, "--data-dir", dataDir)
}

// TestLedgerSurvivesRestartAndKill: decisions recorded by one process are
// all there, verified, after a clean restart and after SIGKILL.
func TestLedgerSurvivesRestartAndKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	cfg := quickstart(t)
	data := filepath.Join(t.TempDir(), "data")
	evaluate := func(s *server, n int) int {
		last := 0
		for i := range n {
			body := fmt.Sprintf(`{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/customers/%d"}}`, i)
			status, out := s.post(t, "/v1/evaluate", "k-ops", body)
			if status != 200 {
				t.Fatalf("evaluate: got %d %v", status, out)
			}
			l, _ := out["ledger"].(map[string]any)
			if l == nil {
				t.Fatalf("evaluate answered without a ledger reference: %v", out)
			}
			seq := int(l["sequence"].(float64))
			if seq != last+1 && last != 0 {
				t.Fatalf("sequence %d after %d", seq, last)
			}
			last = seq
		}
		return last
	}
	verify := func(s *server, want int) {
		status, r := s.get(t, "/v1/ledger/support-bot/verify", "k-view")
		if status != 200 || r["valid"] != true || int(r["entries"].(float64)) != want {
			t.Fatalf("verify: got %d %v, want a valid chain of %d", status, r, want)
		}
	}

	s := startServeIn(t, data, cfg)
	n := evaluate(s, 25)
	verify(s, n)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-s.done; err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.stderr.String())
	}
	s.done <- nil

	s = startServeIn(t, data, cfg)
	verify(s, n)
	n = evaluate(s, 25)
	if err := s.cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown at all
		t.Fatal(err)
	}
	<-s.done
	s.done <- nil

	s = startServeIn(t, data, cfg)
	verify(s, n) // every acknowledged entry survived the kill
	if !strings.Contains(s.stderr.String(), `"ledger opened"`) {
		t.Errorf("the log does not report the ledger opening:\n%s", s.stderr.String())
	}

	// The export verifies offline with the published rule alone.
	out := filepath.Join(t.TempDir(), "chain.ndjson")
	exp, err := exec.Command(vigilBinary(t), "ledger", "export", "--server", s.base, "--api-key", "k-view", "--out", out, "support-bot").CombinedOutput()
	if err != nil {
		t.Fatalf("vigil ledger export: %v\n%s", err, exp)
	}
	ver, err := exec.Command(vigilBinary(t), "ledger", "verify-file", out).CombinedOutput()
	if err != nil || !strings.Contains(string(ver), "intact") {
		t.Fatalf("vigil ledger verify-file: %v\n%s", err, ver)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("export file mode: got %v, %v; want 0600", st.Mode().Perm(), err)
	}
}

// TestLedgerDisabled: with runtime.enable_ledger false nothing is recorded,
// evaluate answers "ledger": null, the ledger routes say it is disabled,
// and no ledger file is created.
func TestLedgerDisabled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	cfg := strings.Replace(quickstart(t), "enable_ledger: true", "enable_ledger: false", 1)
	if !strings.Contains(cfg, "enable_ledger: false") {
		t.Fatal("the quickstart no longer has runtime.enable_ledger")
	}
	data := filepath.Join(t.TempDir(), "data")
	s := startServeIn(t, data, cfg)
	status, out := s.post(t, "/v1/evaluate", "k-ops", `{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/customers/1"}}`)
	if status != 200 || out["ledger"] != nil || out["decision"] != "ALLOW" {
		t.Errorf("evaluate: got %d %v, want ALLOW with ledger null", status, out)
	}
	status, out = s.get(t, "/v1/ledger/support-bot/latest", "k-view")
	if e, _ := out["error"].(map[string]any); status != 404 || !strings.Contains(e["message"].(string), "disabled") {
		t.Errorf("ledger route: got %d %v, want 404 saying the ledger is disabled", status, out)
	}
	_, info := s.get(t, "/v1/info", "k-view")
	if info["ledger_enabled"] != false {
		t.Errorf("info: got ledger_enabled %v, want false", info["ledger_enabled"])
	}
	if _, err := os.Stat(filepath.Join(data, "ledger", "ledger.log")); !os.IsNotExist(err) {
		t.Errorf("a ledger file exists with the ledger disabled (%v)", err)
	}
}
