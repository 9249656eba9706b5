package proxy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy"
)

// TestHTTPSInterception: with a CA, a client that trusts the Vigil CA (and
// nothing else) talks TLS to the proxy, whose inner requests are governed
// like plain ones and forwarded over TLS to an upstream whose own CA the
// proxy trusts (upstream_ca_file).
func TestHTTPSInterception(t *testing.T) {
	ca, err := proxy.InitCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var hits int
	tool := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		_, _ = io.WriteString(w, "inner "+r.Method+" "+r.URL.Path)
	}))
	defer tool.Close()
	upstreamCAs := x509.NewCertPool()
	upstreamCAs.AddCert(tool.Certificate())

	h := newHarness(t, setup{contracts: []governor.Contract{{AgentID: "bot", Scope: []string{"read"}}},
		tokens:    map[string]string{"bot": "s3cret"},
		configure: func(o *proxy.Options) { o.CA, o.UpstreamCAs = ca, upstreamCAs }})

	trustVigil := x509.NewCertPool()
	trustVigil.AddCert(ca.Certificate())
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: h.addr, User: url.UserPassword("bot", "s3cret")}),
		TLSClientConfig: &tls.Config{RootCAs: trustVigil},
	}}
	tests := []struct {
		name      string
		method    string
		wantCode  int
		wantVerd  string
		wantBody  string
		wantCalls int
	}{
		{"allowed inner GET reaches the tool over TLS", http.MethodGet, 200, "ALLOW", "inner GET /a", 1},
		{"denied inner DELETE never reaches the tool", http.MethodDelete, 403, "DENY", "governance_denied", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tool.URL+"/a", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("through the intercepting proxy: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(b), tc.wantBody) {
				t.Fatalf("got %d %q, want %d with %q", resp.StatusCode, b, tc.wantCode, tc.wantBody)
			}
			wantHeader(t, resp, proxy.HeaderVerdict, tc.wantVerd)
			if resp.TLS == nil || resp.TLS.PeerCertificates[0].Issuer.CommonName != ca.Certificate().Subject.CommonName {
				t.Errorf("the client's TLS peer is not a leaf of the Vigil CA")
			}
			if hits != tc.wantCalls {
				t.Errorf("tool calls: got %d, want %d", hits, tc.wantCalls)
			}
		})
	}
	// Each inner request is one action, no "connect" action for the tunnel.
	recs, err := h.ledger.List(context.Background(), "bot", "", 10)
	if err != nil || len(recs) != 2 {
		t.Fatalf("ledger: %d entries (%v), want 2", len(recs), err)
	}
	host := strings.TrimPrefix(tool.URL, "https://")
	if !strings.Contains(string(recs[1].Body), `"target":"`+host+`/a"`) || !strings.Contains(string(recs[1].Body), `"type":"read"`) {
		t.Errorf("first entry: got %s, want a read of %s/a", recs[1].Body, host)
	}

	// A client that does not trust the Vigil CA refuses the interception.
	strict := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: h.addr, User: url.UserPassword("bot", "s3cret")}),
	}}
	if resp, err := strict.Get(tool.URL + "/a"); err == nil {
		resp.Body.Close()
		t.Error("a client trusting only the system roots accepted the intercepted tunnel")
	}
}
