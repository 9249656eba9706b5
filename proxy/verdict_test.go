package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// botContract is the agent most tests use: it may read and create, a
// delete always needs a human.
func botContract() governor.Contract {
	return governor.Contract{AgentID: "bot", Scope: []string{"read", "create", "delete", "search_docs", "connect"},
		HumanOverride: []string{"delete"}}
}

func botSetup() setup {
	return setup{contracts: []governor.Contract{botContract()}, tokens: map[string]string{"bot": "s3cret"}}
}

func okUpstream(t *testing.T, u *upstream) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.record(r)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "tool says hi")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVerdictsEnforced(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantVerd   string
		wantCalls  int64
		wantCode   string // error.code of a refusal
		wantBody   string // the answer of a forwarded call
	}{
		{"ALLOW forwards a read", http.MethodGet, "/docs?q=go", "", 200, "ALLOW", 1, "", "tool says hi"},
		{"ALLOW forwards a create with a JSON body", http.MethodPost, "/items", `{"name":"x"}`, 200, "ALLOW", 1, "", "tool says hi"},
		{"DENY refuses an action out of scope and never calls the tool", http.MethodPut, "/items/1", `{"name":"y"}`, 403, "DENY", 0, "governance_denied", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, botSetup())
			var u upstream
			srv := okUpstream(t, &u)
			resp, body := do(t, h.client("bot", "s3cret"), tc.method, srv.URL+tc.path, "application/json", tc.body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("got status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			wantHeader(t, resp, proxy.HeaderVerdict, tc.wantVerd)
			wantHeader(t, resp, proxy.HeaderLedgerSeq, "1")
			if got := u.calls.Load(); got != tc.wantCalls {
				t.Errorf("upstream calls: got %d, want %d", got, tc.wantCalls)
			}
			if got := h.ledgerVerdicts("bot"); len(got) != 1 || got[0] != tc.wantVerd {
				t.Errorf("ledger: got %v, want [%s]", got, tc.wantVerd)
			}
			if tc.wantCode != "" {
				m := decodeJSON(t, body)
				if got := path(m, "error", "code"); got != tc.wantCode {
					t.Errorf("error.code: got %v, want %s", got, tc.wantCode)
				}
				if got := path(m, "verdict", "decision"); got != tc.wantVerd {
					t.Errorf("verdict.decision: got %v, want %s", got, tc.wantVerd)
				}
				if got := path(m, "ledger", "sequence"); got != float64(1) {
					t.Errorf("ledger.sequence: got %v, want 1", got)
				}
				if got, ok := path(m, "verdict", "vetoes").([]any); !ok || len(got) == 0 {
					t.Errorf("verdict.vetoes: got %v, want the veto", path(m, "verdict", "vetoes"))
				}
				return
			}
			if string(body) != tc.wantBody {
				t.Errorf("body: got %q, want %q", body, tc.wantBody)
			}
			last := u.last.Load()
			if got := last.Header.Get("Proxy-Authorization"); got != "" {
				t.Errorf("the tool received Proxy-Authorization %q", got)
			}
			if tc.body != "" {
				if got := string(*u.body.Load()); got != tc.body {
					t.Errorf("the tool received body %q, want %q", got, tc.body)
				}
			}
		})
	}
}

func TestLedgerEntryWrittenBeforeForwarding(t *testing.T) {
	h := newHarness(t, botSetup())
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = h.ledgerVerdicts("bot") // what the ledger holds while the tool runs
	}))
	defer srv.Close()
	resp, _ := do(t, h.client("bot", "s3cret"), http.MethodGet, srv.URL+"/x", "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("got status %d, want 200", resp.StatusCode)
	}
	if len(seen) != 1 || seen[0] != "ALLOW" {
		t.Errorf("ledger while the tool ran: got %v, want [ALLOW]", seen)
	}
}

func TestHoldThenApprove(t *testing.T) {
	s := botSetup()
	s.hold = 10 * time.Second
	h := newHarness(t, s)
	var u upstream
	srv := okUpstream(t, &u)
	type result struct {
		resp *http.Response
		body []byte
	}
	done := make(chan result, 1)
	go func() {
		resp, body := do(t, h.client("bot", "s3cret"), http.MethodDelete, srv.URL+"/items/7", "", "")
		done <- result{resp, body}
	}()
	id := waitPending(t, h)
	if got := u.calls.Load(); got != 0 {
		t.Fatalf("the tool was called %d times while the call was held", got)
	}
	if _, err := h.approvals.Decide(context.Background(), id, true, "alice", "fine"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.resp.StatusCode != 200 || string(r.body) != "tool says hi" {
		t.Fatalf("got %d %q, want the tool's answer", r.resp.StatusCode, r.body)
	}
	wantHeader(t, r.resp, proxy.HeaderVerdict, "ESCALATE")
	wantHeader(t, r.resp, proxy.HeaderApproval, "approved")
	wantHeader(t, r.resp, proxy.HeaderApprovalID, id)
	if got := u.calls.Load(); got != 1 {
		t.Errorf("upstream calls: got %d, want 1", got)
	}
	// The approval was used by this call: an identical retry is held again.
	resp, _ := do(t, shortHold(t, h), http.MethodDelete, srv.URL+"/items/7", "", "")
	if resp.StatusCode != 403 {
		t.Errorf("retry after the approved call: got %d, want 403 (held, timed out)", resp.StatusCode)
	}
}

// shortHold is a client for a second call expected to be held: its own
// harness-independent timeout is not the proxy's; the approval is left
// pending and denied so the hold ends.
func shortHold(t *testing.T, h *harness) *http.Client {
	go func() {
		id := waitPendingNot(t, h)
		_, _ = h.approvals.Decide(context.Background(), id, false, "alice", "no")
	}()
	return h.client("bot", "s3cret")
}

func TestHoldOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		decide     string // "deny", or "" to let the hold time out
		wantStatus string // the approval's status afterwards
	}{
		{"denied", "deny", controlplane.ApprovalDenied},
		{"hold timeout", "", controlplane.ApprovalPending},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := botSetup()
			s.hold = 10 * time.Second
			if tc.decide == "" {
				s.hold = 300 * time.Millisecond
			}
			h := newHarness(t, s)
			var u upstream
			srv := okUpstream(t, &u)
			if tc.decide == "deny" {
				go func() {
					id := waitPending(t, h)
					_, _ = h.approvals.Decide(context.Background(), id, false, "alice", "not today")
				}()
			}
			resp, body := do(t, h.client("bot", "s3cret"), http.MethodDelete, srv.URL+"/items/7", "", "")
			if resp.StatusCode != 403 {
				t.Fatalf("got %d, want 403: %s", resp.StatusCode, body)
			}
			wantHeader(t, resp, proxy.HeaderVerdict, "ESCALATE")
			m := decodeJSON(t, body)
			if got := path(m, "error", "code"); got != proxy.CodeEscalated {
				t.Errorf("error.code: got %v, want %s", got, proxy.CodeEscalated)
			}
			id, _ := path(m, "approval_id").(string)
			if !strings.HasPrefix(id, "apr_") {
				t.Fatalf("approval_id: got %q, want an approval id", id)
			}
			a, err := h.approvals.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != tc.wantStatus {
				t.Errorf("approval status: got %s, want %s", a.Status, tc.wantStatus)
			}
			if a.Ledger == nil || a.Ledger.Sequence != 1 {
				t.Errorf("approval ledger ref: got %+v, want sequence 1", a.Ledger)
			}
			if got := u.calls.Load(); got != 0 {
				t.Errorf("upstream calls: got %d, want 0", got)
			}
		})
	}
}

func TestHeldCallRetriedAfterLateApprovalPasses(t *testing.T) {
	s := botSetup()
	s.hold = 200 * time.Millisecond
	h := newHarness(t, s)
	var u upstream
	srv := okUpstream(t, &u)
	c := h.client("bot", "s3cret")
	resp, body := do(t, c, http.MethodDelete, srv.URL+"/items/9", "", "")
	if resp.StatusCode != 403 {
		t.Fatalf("first call: got %d, want 403", resp.StatusCode)
	}
	id, _ := path(decodeJSON(t, body), "approval_id").(string)
	if _, err := h.approvals.Decide(context.Background(), id, true, "alice", "ok now"); err != nil {
		t.Fatal(err)
	}
	resp, body = do(t, c, http.MethodDelete, srv.URL+"/items/9", "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("retry after approval: got %d, want 200: %s", resp.StatusCode, body)
	}
	wantHeader(t, resp, proxy.HeaderVerdict, "ALLOW")
	if got := h.ledgerVerdicts("bot"); strings.Join(got, ",") != "ESCALATE,ALLOW" {
		t.Errorf("ledger: got %v, want [ESCALATE ALLOW]", got)
	}
}

// waitPending waits for the first pending approval and returns its id.
func waitPending(t *testing.T, h *harness) string {
	var id string
	waitFor(t, "a pending approval", func() bool {
		as, err := h.approvals.List(context.Background(), controlplane.ApprovalPending, 0)
		if err == nil && len(as) > 0 {
			id = as[0].ID
			return true
		}
		return false
	})
	return id
}

// waitPendingNot waits for a pending approval (any) and returns its id;
// used when earlier approvals are already decided.
func waitPendingNot(t *testing.T, h *harness) string { return waitPending(t, h) }

func TestModify(t *testing.T) {
	cfg := governor.DefaultConfig()
	cfg.AllowThreshold = 0.95 // every action reaches tier 3
	route := toolcall.Route{Host: "127.0.0.1:*", Method: http.MethodDelete, Path: "/cache/*", Action: "delete_cache",
		Reversibility: governor.Compensable}
	tests := []struct {
		name       string
		modify     toolcall.Modification
		wantStatus int
		wantQuery  string
		wantHeader string
	}{
		{"route modification applied", toolcall.Modification{SetQuery: map[string]string{"dry_run": "true"},
			SetHeaders: map[string]string{"X-Dry-Run": "1"}}, 200, "true", "1"},
		{"no modification declared: escalated", toolcall.Modification{}, 403, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := route
			r.Modify = tc.modify
			h := newHarness(t, setup{cfg: &cfg, contracts: []governor.Contract{{AgentID: "bot"}},
				tokens: map[string]string{"bot": "s3cret"}, routes: []toolcall.Route{r}, hold: 200 * time.Millisecond})
			var u upstream
			srv := okUpstream(t, &u)
			resp, body := do(t, h.client("bot", "s3cret"), http.MethodDelete, srv.URL+"/cache/x?k=1", "", "")
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("got %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			wantHeader(t, resp, proxy.HeaderVerdict, "MODIFY")
			if tc.wantStatus != 200 {
				if u.calls.Load() != 0 {
					t.Errorf("the tool was called")
				}
				return
			}
			last := u.last.Load()
			if got := last.URL.Query().Get("dry_run"); got != tc.wantQuery {
				t.Errorf("dry_run: got %q, want %q", got, tc.wantQuery)
			}
			if got := last.URL.Query().Get("k"); got != "1" {
				t.Errorf("k: got %q, want the original 1", got)
			}
			if got := last.Header.Get("X-Dry-Run"); got != tc.wantHeader {
				t.Errorf("X-Dry-Run: got %q, want %q", got, tc.wantHeader)
			}
		})
	}
}

func TestSuspendRefuses(t *testing.T) {
	h := newHarness(t, botSetup())
	var u upstream
	srv := okUpstream(t, &u)
	h.engine.SetOverlays(governor.Overlays{"bot": {Suspended: true, Directives: []string{"dir_x"}}})
	resp, body := do(t, h.client("bot", "s3cret"), http.MethodGet, srv.URL+"/docs", "", "")
	if resp.StatusCode != 403 {
		t.Fatalf("got %d, want 403", resp.StatusCode)
	}
	wantHeader(t, resp, proxy.HeaderVerdict, "SUSPEND")
	if got := path(decodeJSON(t, body), "error", "code"); got != proxy.CodeSuspended {
		t.Errorf("error.code: got %v, want %s", got, proxy.CodeSuspended)
	}
	if u.calls.Load() != 0 {
		t.Errorf("the tool was called")
	}
}

func TestAdvisoryHeader(t *testing.T) {
	h := newHarness(t, botSetup())
	var u upstream
	srv := okUpstream(t, &u)
	if _, err := h.plane.Issue(context.Background(), controlplane.IssueRequest{Type: "broadcast_reminder", Operator: "alice",
		Reason: "remind", Target: controlplane.Target{AgentIDs: []string{"bot"}},
		Parameters: controlplane.Parameters{Message: "cite your sources"}}); err != nil {
		t.Fatal(err)
	}
	resp, _ := do(t, h.client("bot", "s3cret"), http.MethodGet, srv.URL+"/docs", "", "")
	wantHeader(t, resp, proxy.HeaderAdvisory, "cite your sources")
}

func TestLedgerDisabledNoSequenceHeader(t *testing.T) {
	s := botSetup()
	s.noLedger = true
	h := newHarness(t, s)
	var u upstream
	srv := okUpstream(t, &u)
	resp, _ := do(t, h.client("bot", "s3cret"), http.MethodGet, srv.URL+"/docs", "", "")
	wantHeader(t, resp, proxy.HeaderVerdict, "ALLOW")
	wantHeader(t, resp, proxy.HeaderLedgerSeq, "")
}
