package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/test/redistest"
)

// evaluateMany evaluates n varied actions of support-bot.
func (s *server) evaluateMany(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		body := fmt.Sprintf(`{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/customers/%d"}}`, i)
		if i%5 == 4 { // a refund over the authority limit: DENY, trust drops
			body = `{"agent_id":"support-bot","action":{"type":"refund","target":"payments/orders/42","parameters":{"amount":900}}}`
		}
		if status, out := s.post(t, "/v1/evaluate", "k-ops", body); status != http.StatusOK {
			t.Fatalf("evaluate %d: got %d %v", i, status, out)
		}
	}
}

// agentState is what must survive a restart of GET /v1/agents/support-bot.
func (s *server) agentState(t *testing.T) (observations float64, trust string) {
	t.Helper()
	status, out := s.get(t, "/v1/agents/support-bot", "k-view")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/agents/support-bot: got %d %v", status, out)
	}
	obs, _ := out["observations"].(float64)
	tr, _ := json.Marshal(out["trust"]) // score, direction, velocity, violations
	return obs, string(tr)
}

// TestAgentStateSurvivesRestart: after 15 evaluations and a SIGTERM, a
// process on the same data directory reports the same observations and
// trust for the agent, and continues from there.
func TestAgentStateSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cfg := quickstart(t)
	data := filepath.Join(t.TempDir(), "data")
	a := startServeIn(t, data, cfg)
	a.evaluateMany(t, 15)
	obs, trust := a.agentState(t)
	if obs != 15 || !strings.Contains(trust, `"violations":3`) {
		t.Fatalf("before the restart: observations %v, trust %s; want 15 and 3 violations", obs, trust)
	}
	a.stop(t)
	if _, err := os.Stat(filepath.Join(data, "controlplane", "agents", "support-bot.json")); err != nil {
		t.Errorf("snapshot file: %v", err)
	}

	b := startServeIn(t, data, cfg)
	if gotObs, gotTrust := b.agentState(t); gotObs != obs || gotTrust != trust {
		t.Errorf("after the restart: observations %v, trust %s; want %v, %s", gotObs, gotTrust, obs, trust)
	}
	if !strings.Contains(b.stderr.String(), `"msg":"agent state restored","agents":1`) {
		t.Errorf("log does not report the restore:\n%s", b.stderr.String())
	}
	b.evaluateMany(t, 1)
	if gotObs, _ := b.agentState(t); gotObs != 16 {
		t.Errorf("after one more evaluation: observations %v, want 16 (continuing)", gotObs)
	}
	b.stop(t)
}

// TestAgentStateSharedThroughRedis: on Redis, a sidecar that restores the
// agent (another process, another data directory) continues from the state
// the first one saved; while Redis is down /v1/health says degraded, and ok
// again once it is back.
func TestAgentStateSharedThroughRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary and redis-server")
	}
	rdb := redistest.Start(t)
	cfg := quickstart(t)
	a := startServe(t, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "a"))
	a.evaluateMany(t, 15)
	obs, trust := a.agentState(t)
	a.stop(t)

	b := startServe(t, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "b"))
	if gotObs, gotTrust := b.agentState(t); gotObs != obs || gotTrust != trust {
		t.Errorf("on another sidecar: observations %v, trust %s; want %v, %s", gotObs, gotTrust, obs, trust)
	}

	rdb.Stop()
	health := func() (int, map[string]any) {
		resp, err := http.Get(b.base + "/v1/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	eventually(t, "health says the circuit is open", func() bool {
		status, out := health()
		checks, _ := out["checks"].(map[string]any)
		return status == http.StatusServiceUnavailable && out["status"] == "degraded" && checks["redis"] == "circuit open"
	})
	rdb.Restart()
	eventually(t, "health says ok again", func() bool {
		status, out := health()
		return status == http.StatusOK && out["status"] == "ok"
	})
	b.stop(t)
}
