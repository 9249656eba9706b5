package test

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/test/redistest"
)

// TestRedisOutageSpoolsAndReplays: a sidecar on Redis keeps governing its
// agent's calls while Redis is down. Their ledger entries wait in the local
// spool (the answers say so, and /v1/health is degraded); when Redis is
// back they are replayed, and the agent's chain in Redis holds every call,
// whole, in order.
func TestRedisOutageSpoolsAndReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary and redis-server")
	}
	rdb := redistest.Start(t)
	s := startServe(t, proxyConfig, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "a"))
	tool, calls := toolServer(t)
	c := s.agentClient()

	ledgerHeaders := func(path string) (string, string) {
		t.Helper()
		resp, err := c.Get(tool.URL + path)
		if err != nil {
			t.Fatalf("call %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Vigil-Verdict") != "ALLOW" {
			t.Fatalf("call %s: got %d %q, want 200 ALLOW", path, resp.StatusCode, resp.Header.Get("X-Vigil-Verdict"))
		}
		return resp.Header.Get("X-Vigil-Ledger-Seq"), resp.Header.Get("X-Vigil-Ledger")
	}
	for i := 1; i <= 3; i++ {
		if seq, spooled := ledgerHeaders("/before/" + strconv.Itoa(i)); seq != strconv.Itoa(i) || spooled != "" {
			t.Fatalf("call %d with Redis up: ledger seq %q, X-Vigil-Ledger %q", i, seq, spooled)
		}
	}

	rdb.Stop()
	var took []string
	for i := 1; i <= 10; i++ {
		t0 := time.Now()
		seq, spooled := ledgerHeaders("/during/" + strconv.Itoa(i))
		took = append(took, time.Since(t0).Round(time.Millisecond).String())
		if seq != "" || spooled != "spooled" {
			t.Fatalf("call %d with Redis down: ledger seq %q, X-Vigil-Ledger %q; want the entry spooled", i, seq, spooled)
		}
	}
	status, health := s.get(t, "/v1/health", "")
	checks, _ := health["checks"].(map[string]any)
	if status != http.StatusServiceUnavailable || health["status"] != "degraded" || checks["ledger"] == "ok" || checks["ledger"] == nil {
		t.Fatalf("health with Redis down: got %d %v, want 503 degraded with a ledger check", status, health)
	}

	// The first calls wait for Redis's timeouts until the breakers open.
	t.Logf("calls during the outage took %s", strings.Join(took, ", "))
	rdb.Restart()
	back := time.Now()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, health = s.get(t, "/v1/health", "")
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health 30 s after Redis came back: %d %v", status, health)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("healthy %s after Redis came back", time.Since(back).Round(time.Millisecond))
	if seq, _ := ledgerHeaders("/after"); seq != "14" {
		t.Fatalf("first call after the replay: ledger seq %q, want 14", seq)
	}
	status, rep := s.get(t, "/v1/ledger/tool-bot/verify", "k-view")
	if status != 200 || rep["valid"] != true || rep["entries"] != float64(14) {
		t.Fatalf("verify after the replay: got %d %v, want 14 valid entries", status, rep)
	}
	status, list := s.get(t, "/v1/ledger/tool-bot?limit=14", "k-view")
	entries, _ := list["entries"].([]any)
	if status != 200 || len(entries) != 14 {
		t.Fatalf("entries after the replay: got %d, %d entries", status, len(entries))
	}
	// Newest first: /after, then /during/10 … /during/1, then /before/3 … 1.
	for i, e := range entries {
		target, _ := e.(map[string]any)["action"].(map[string]any)["target"].(string)
		want := "/after"
		switch {
		case i >= 1 && i <= 10:
			want = "/during/" + strconv.Itoa(11-i)
		case i > 10:
			want = "/before/" + strconv.Itoa(14-i)
		}
		if !strings.HasSuffix(target, want) {
			t.Errorf("entry %d (newest first): target %q, want …%s", i, target, want)
		}
	}
	if calls.Load() != 14 {
		t.Errorf("tool calls: got %d, want 14", calls.Load())
	}
	s.stop(t)
}
