package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy"
)

func TestQuarantineCancelsInFlightSSEStream(t *testing.T) {
	h := newHarness(t, botSetup())
	upstreamCancelled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(upstreamCancelled)
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/events", nil)
	resp, err := h.client("bot", "s3cret").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	wantHeader(t, resp, proxy.HeaderVerdict, "ALLOW")
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first event: got %q, %v; want it streamed before the stream ends", line, err)
	}
	if got := h.proxy.InFlight("bot"); got != 1 {
		t.Fatalf("in flight: got %d, want 1", got)
	}
	trustBefore := status(t, h, "bot").Trust
	d, err := h.plane.Issue(context.Background(), controlplane.IssueRequest{Type: "quarantine", Operator: "alice",
		Reason: "suspicious", Target: controlplane.Target{AgentIDs: []string{"bot"}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-upstreamCancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
	readDone := make(chan error, 1)
	go func() { _, err := io.ReadAll(br); readDone <- err }()
	select {
	case <-readDone: // the stream ended (cut) for the agent
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's stream did not end")
	}
	waitFor(t, "the call to end", func() bool { return h.proxy.InFlight("bot") == 0 })
	if got := status(t, h, "bot").Trust - trustBefore; got > -0.029 || got < -0.031 {
		t.Errorf("trust change: got %.4f, want -0.03 (interrupted)", got)
	}
	if got := h.proxy.Stats().Interrupted; got != 1 {
		t.Errorf("interrupted: got %d, want 1", got)
	}
	waitFor(t, "the interruption event", func() bool {
		evs, _ := h.store.Events(context.Background(), controlplane.EventFilter{ContextCode: proxy.CodeCallInterrupted})
		if len(evs) != 1 {
			return false
		}
		e := evs[0]
		return e.Target == "bot" && strings.Contains(e.Reason, "quarantined") && strings.Contains(e.Reason, d.ID)
	})
	// While quarantined, the next call is held (ESCALATE).
	s := h.client("bot", "s3cret")
	go func() {
		id := waitPending(t, h)
		_, _ = h.approvals.Decide(context.Background(), id, false, "alice", "no")
	}()
	resp2, _ := do(t, s, http.MethodGet, srv.URL+"/other", "", "")
	wantHeader(t, resp2, proxy.HeaderVerdict, "ESCALATE")
}

func status(t *testing.T, h *harness, agent string) governor.AgentStatus {
	t.Helper()
	st, err := h.engine.Status(agent)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestCallOutcomesFeedTrust(t *testing.T) {
	h := newHarness(t, botSetup())
	var u upstream
	srv := okUpstream(t, &u)
	before := status(t, h, "bot").Trust
	resp, _ := do(t, h.client("bot", "s3cret"), http.MethodGet, srv.URL+"/docs", "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	// ALLOW +0.01 (governor), completed call +0.005 (proxy).
	waitFor(t, "the call to end", func() bool { return h.proxy.InFlight("bot") == 0 })
	if got := status(t, h, "bot").Trust - before; got < 0.0149 || got > 0.0151 {
		t.Errorf("trust change: got %.4f, want +0.015", got)
	}
	if got := status(t, h, "bot").InFlight; got != 0 {
		t.Errorf("governor in flight: got %d, want 0", got)
	}
}

func TestUpstreamFailures(t *testing.T) {
	h := newHarness(t, setup{contracts: []governor.Contract{botContract()}, tokens: map[string]string{"bot": "s3cret"},
		configure: func(o *proxy.Options) { o.Breaker = proxy.BreakerConfig{Failures: 3, OpenFor: 300 * time.Millisecond} }})
	var healthy atomic.Bool
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if !healthy.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "up")
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c := h.client("bot", "s3cret")
	for i := range 3 {
		resp, body := do(t, c, http.MethodGet, srv.URL+"/x", "", "")
		if resp.StatusCode != 503 || string(body) != "down\n" {
			t.Fatalf("call %d: got %d %q, want the tool's own 503", i+1, resp.StatusCode, body)
		}
		wantHeader(t, resp, proxy.HeaderVerdict, "ALLOW")
	}
	if got := h.proxy.BreakerState(host); got != "open" {
		t.Fatalf("breaker after 3 failures: got %s, want open", got)
	}
	resp, body := do(t, c, http.MethodGet, srv.URL+"/x", "", "")
	if resp.StatusCode != 503 || path(decodeJSON(t, body), "error", "code") != proxy.CodeUpstreamUnavailable {
		t.Fatalf("open breaker: got %d %s, want 503 %s", resp.StatusCode, body, proxy.CodeUpstreamUnavailable)
	}
	wantHeader(t, resp, proxy.HeaderVerdict, "ALLOW")
	wantHeader(t, resp, proxy.HeaderLedgerSeq, "4") // decided and recorded before the breaker refused
	if got := calls.Load(); got != 3 {
		t.Errorf("the tool was called %d times, want 3 (the 4th failed fast)", got)
	}
	// Three 503 answers and one fail-fast: four upstream failures, and no
	// trust gained from them.
	waitFor(t, "the calls to end", func() bool { return h.proxy.InFlight("bot") == 0 })
	if got := status(t, h, "bot").UpstreamFailures; got != 4 {
		t.Errorf("upstream failures in the agent's state: got %d, want 4", got)
	}
	healthy.Store(true)
	time.Sleep(350 * time.Millisecond)
	resp, body = do(t, c, http.MethodGet, srv.URL+"/x", "", "")
	if resp.StatusCode != 200 || string(body) != "up" {
		t.Fatalf("after the open period: got %d %q, want the tool's answer", resp.StatusCode, body)
	}
	if got := h.proxy.BreakerState(host); got != "closed" {
		t.Errorf("breaker after a successful probe: got %s, want closed", got)
	}
}

func TestUpstreamUnreachable(t *testing.T) {
	h := newHarness(t, botSetup())
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close() // nothing listens there now
	resp, body := do(t, h.client("bot", "s3cret"), http.MethodGet, dead+"/x", "", "")
	if resp.StatusCode != 502 {
		t.Fatalf("got %d, want 502", resp.StatusCode)
	}
	wantHeader(t, resp, proxy.HeaderVerdict, "ALLOW")
	wantHeader(t, resp, proxy.HeaderLedgerSeq, "1")
	if got := path(decodeJSON(t, body), "error", "code"); got != proxy.CodeUpstreamUnreachable {
		t.Errorf("error.code: got %v, want %s", got, proxy.CodeUpstreamUnreachable)
	}
	if got := h.proxy.Stats().UpstreamErrors; got != 1 {
		t.Errorf("upstream errors: got %d, want 1", got)
	}
	waitFor(t, "the call to end", func() bool { return h.proxy.InFlight("bot") == 0 })
	if st := status(t, h, "bot"); st.UpstreamFailures != 1 || st.InFlight != 0 {
		t.Errorf("agent state: got %d upstream failures, %d in flight; want 1 and 0", st.UpstreamFailures, st.InFlight)
	}
}

func TestConnectWithoutCA(t *testing.T) {
	tests := []struct {
		name    string
		scope   []string
		wantErr bool
		wantVer string
	}{
		{"allowed: one connect action, the tunnel passes", []string{"connect"}, false, "ALLOW"},
		{"denied: the tunnel is refused", []string{"read"}, true, "DENY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, setup{contracts: []governor.Contract{{AgentID: "bot", Scope: tc.scope}},
				tokens: map[string]string{"bot": "s3cret"}})
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "secret tool")
			}))
			defer srv.Close()
			tr := srv.Client().Transport.(*http.Transport).Clone()
			tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: h.addr, User: url.UserPassword("bot", "s3cret")})
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			resp, err := c.Get(srv.URL + "/a")
			if tc.wantErr {
				if err == nil {
					resp.Body.Close()
					t.Fatal("got an answer through a refused tunnel")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "secret tool" {
					t.Errorf("got %q through the tunnel", b)
				}
			}
			recs, err := h.ledger.List(context.Background(), "bot", "", 10)
			if err != nil || len(recs) != 1 {
				t.Fatalf("ledger: %d entries (%v), want 1", len(recs), err)
			}
			host := strings.TrimPrefix(srv.URL, "https://")
			if recs[0].Verdict != tc.wantVer || !strings.Contains(string(recs[0].Body), fmt.Sprintf(`"target":%q`, host)) ||
				!strings.Contains(string(recs[0].Body), `"type":"connect"`) {
				t.Errorf("entry: got %s, want a %s connect to %s", recs[0].Body, tc.wantVer, host)
			}
			tr.CloseIdleConnections()
			waitFor(t, "the tunnel to end", func() bool { return h.proxy.InFlight("bot") == 0 })
		})
	}
}

// TestTransportIgnoresProxyEnvironment: the proxy's own upstream transport
// never goes through HTTP_PROXY or HTTPS_PROXY (it would loop through
// itself when the sidecar's environment is the agent's).
func TestTransportIgnoresProxyEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("NO_PROXY", "")
	h := newHarness(t, botSetup())
	var u upstream
	srv := okUpstream(t, &u)
	resp, body := do(t, h.client("bot", "s3cret"), http.MethodGet, srv.URL+"/docs", "", "")
	if resp.StatusCode != 200 || u.calls.Load() != 1 {
		t.Errorf("got %d %q with %d tool calls, want the tool's answer", resp.StatusCode, body, u.calls.Load())
	}
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer tls.Close()
	tr := tls.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: h.addr, User: url.UserPassword("bot", "s3cret")})
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(tls.URL)
	if err != nil {
		t.Fatalf("CONNECT tunnel with HTTPS_PROXY set: %v", err)
	}
	resp.Body.Close()
}

// TestUpgradedConnectionRelayed: a WebSocket upgrade (101) is
// governed like any call and then relayed both ways.
func TestUpgradedConnectionRelayed(t *testing.T) {
	h := newHarness(t, botSetup())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		_, _ = brw.WriteString("echo: " + line)
		_ = brw.Flush()
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET %s/ws HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic Ym90OnMzY3JldA==\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		srv.URL, strings.TrimPrefix(srv.URL, "http://"))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get(proxy.HeaderVerdict) != "ALLOW" {
		t.Fatalf("got %d with verdict %q, want 101 ALLOW", resp.StatusCode, resp.Header.Get(proxy.HeaderVerdict))
	}
	fmt.Fprintf(conn, "hello\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo: hello\n" {
		t.Fatalf("relayed: got %q, %v; want the echo", line, err)
	}
}
