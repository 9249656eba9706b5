package proxy_test

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy"
)

func TestIdentity(t *testing.T) {
	basic := func(cred string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(cred)) }
	tests := []struct {
		name     string
		defAgent string
		auth     string // Proxy-Authorization ("" none)
		want     int
		wantTool int64
	}{
		{"valid credentials", "", basic("bot:s3cret"), 200, 1},
		{"scheme is case-insensitive", "", "basic " + base64.StdEncoding.EncodeToString([]byte("bot:s3cret")), 200, 1},
		{"no credentials, no default agent", "", "", 407, 0},
		{"no credentials, default agent", "bot", "", 200, 1},
		{"wrong token", "", basic("bot:nope"), 407, 0},
		{"wrong token does not fall back to the default agent", "bot", basic("bot:nope"), 407, 0},
		{"empty token", "", basic("bot:"), 407, 0},
		{"unknown agent", "", basic("eve:s3cret"), 407, 0},
		{"configured token, agent without a contract", "", basic("ghost:boo"), 407, 0},
		{"not base64", "", "Basic !!!", 407, 0},
		{"no colon", "", basic("bots3cret"), 407, 0},
		{"bearer scheme", "", "Bearer s3cret", 407, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := botSetup()
			s.tokens["ghost"] = "boo"
			s.defAgent = tc.defAgent
			h := newHarness(t, s)
			var u upstream
			srv := okUpstream(t, &u)
			c := h.client("", "")
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/docs", nil)
			if tc.auth != "" {
				req.Header.Set("Proxy-Authorization", tc.auth)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("got %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == 407 {
				wantHeader(t, resp, "Proxy-Authenticate", `Basic realm="vigil"`)
				if got := path(decodeJSON(t, body), "error", "code"); got != proxy.CodeProxyAuth {
					t.Errorf("error.code: got %v, want %s", got, proxy.CodeProxyAuth)
				}
			}
			if got := u.calls.Load(); got != tc.wantTool {
				t.Errorf("upstream calls: got %d, want %d", got, tc.wantTool)
			}
		})
	}
}

func TestConnectWithoutCredentialsIs407(t *testing.T) {
	h := newHarness(t, botSetup())
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 407 {
		t.Fatalf("got %d, want 407", resp.StatusCode)
	}
	wantHeader(t, resp, "Proxy-Authenticate", `Basic realm="vigil"`)
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want int
	}{
		{"malformed request line", "GET\r\n\r\n", 400},
		{"header without colon", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nbroken header\r\n\r\n", 400},
		{"invalid header name", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nBad Name: x\r\n\r\n", 400},
		{"origin-form request to the proxy", "GET /path HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, botSetup())
			conn, err := net.Dial("tcp", h.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(conn, tc.raw); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("got %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestBodyLargerThanInspectionCapForwardedIntact(t *testing.T) {
	h := newHarness(t, botSetup())
	var u upstream
	srv := okUpstream(t, &u)
	big := `{"rows":"` + strings.Repeat("x", 300<<10) + `"}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%t", chunked), func(t *testing.T) {
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = io.MultiReader(strings.NewReader(big)) // unknown length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/upload", body)
			resp, err := h.client("bot", "s3cret").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("got %d, want 200", resp.StatusCode)
			}
			if got := *u.body.Load(); string(got) != big {
				t.Errorf("the tool received %d bytes, want the %d sent", len(got), len(big))
			}
		})
	}
}

func TestMalformedJSONRPCGovernedAsPlainPOST(t *testing.T) {
	h := newHarness(t, setup{contracts: []governor.Contract{{AgentID: "bot", Scope: []string{"create"}}},
		tokens: map[string]string{"bot": "s3cret"}})
	var u upstream
	srv := okUpstream(t, &u)
	resp, body := do(t, h.client("bot", "s3cret"), http.MethodPost, srv.URL+"/mcp", "application/json",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":`)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d, want 200 (a plain create): %s", resp.StatusCode, body)
	}
	recs, err := h.ledger.List(t.Context(), "bot", "", 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("ledger: got %d entries (%v), want 1", len(recs), err)
	}
	if !strings.Contains(string(recs[0].Body), `"type":"create"`) {
		t.Errorf("the entry's action is not a plain create: %s", recs[0].Body)
	}
}
