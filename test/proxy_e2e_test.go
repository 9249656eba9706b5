package test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/test/redistest"
)

// proxyConfig has one agent whose deletes need a human; calls are held for
// up to 20 s.
const proxyConfig = `
api_keys:
  - {key: "k-ops", principal: "alice@example.com", role: operator}
  - {key: "k-view", principal: "auditor@example.com", role: viewer}
proxy:
  hold_timeout_seconds: 20
agents:
  - id: tool-bot
    token: "tb-token"
    scope: [read, create, delete]
    human_override: [delete]
`

// agentClient is an HTTP client that uses s's forward proxy as tool-bot.
func (s *server) agentClient() *http.Client {
	u := &url.URL{Scheme: "http", Host: s.proxy, User: url.UserPassword("tool-bot", "tb-token")}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 30 * time.Second}
}

// toolServer is an upstream tool that counts its calls.
func toolServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = fmt.Fprintf(w, "%s %s done", r.Method, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

type callResult struct {
	status  int
	verdict string
	body    string
	err     error
}

func call(c *http.Client, method, u string) callResult {
	req, _ := http.NewRequest(method, u, nil)
	resp, err := c.Do(req)
	if err != nil {
		return callResult{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return callResult{status: resp.StatusCode, verdict: resp.Header.Get("X-Vigil-Verdict"), body: string(b)}
}

// TestProxyE2E: an agent's calls through the real binary's forward proxy
// are decided, recorded, forwarded or held for an operator who approves
// them through the admin API.
func TestProxyE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	s := startServe(t, proxyConfig)
	tool, calls := toolServer(t)
	c := s.agentClient()

	r := call(c, http.MethodGet, tool.URL+"/docs")
	if r.err != nil || r.status != 200 || r.verdict != "ALLOW" || r.body != "GET /docs done" {
		t.Fatalf("allowed call: got %+v", r)
	}
	status, latest := s.get(t, "/v1/ledger/tool-bot/latest", "k-view")
	if status != 200 || latest["sequence"] != float64(1) {
		t.Errorf("ledger latest: got %d %v, want sequence 1", status, latest)
	}

	held := make(chan callResult, 1)
	go func() { held <- call(c, http.MethodDelete, tool.URL+"/items/1") }()
	id := pendingApproval(t, s)
	if calls.Load() != 1 {
		t.Fatalf("the tool was called while the delete was held")
	}
	if status, out := s.post(t, "/v1/approvals/"+id+"/approve", "k-ops", `{"reason":"ok"}`); status != 200 {
		t.Fatalf("approve: got %d %v", status, out)
	}
	r = <-held
	if r.err != nil || r.status != 200 || r.verdict != "ESCALATE" || r.body != "DELETE /items/1 done" {
		t.Fatalf("held call after approval: got %+v, want the tool's answer", r)
	}
	s.stop(t)
}

// TestHeldCallReleasedAcrossSidecars: a call held by one sidecar's proxy is
// released by an approval decided on another sidecar sharing the Redis.
func TestHeldCallReleasedAcrossSidecars(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary and redis-server")
	}
	rdb := redistest.Start(t)
	a := startServe(t, proxyConfig, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "a"))
	b := startServe(t, proxyConfig, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "b"))
	tool, calls := toolServer(t)

	held := make(chan callResult, 1)
	start := time.Now()
	go func() { held <- call(a.agentClient(), http.MethodDelete, tool.URL+"/repos/x") }()
	id := pendingApproval(t, b) // seen on b
	if status, out := b.post(t, "/v1/approvals/"+id+"/approve", "k-ops", `{"reason":"ok"}`); status != 200 {
		t.Fatalf("approve on b: got %d %v", status, out)
	}
	r := <-held
	if r.err != nil || r.status != 200 || r.verdict != "ESCALATE" || !strings.HasPrefix(r.body, "DELETE /repos/x") {
		t.Fatalf("call held on a: got %+v, want released and forwarded", r)
	}
	if calls.Load() != 1 {
		t.Errorf("tool calls: got %d, want 1", calls.Load())
	}
	t.Logf("held on a, approved on b, released after %s", time.Since(start).Round(time.Millisecond))
	a.stop(t)
	b.stop(t)
}

// pendingApproval waits for one pending approval on s and returns its id.
func pendingApproval(t *testing.T, s *server) string {
	t.Helper()
	var id string
	eventually(t, "a pending approval", func() bool {
		_, list := s.get(t, "/v1/approvals?status=pending", "k-view")
		as, _ := list["approvals"].([]any)
		if len(as) == 0 {
			return false
		}
		id, _ = as[0].(map[string]any)["id"].(string)
		return id != ""
	})
	return id
}
