package proxy_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy"
)

// TestShutdownClosesFreshConnections: a connection on which no request has
// started (dialled ahead by an agent's client, or with its request line
// half sent) does not hold Shutdown up. The http.Server alone would count
// such a connection busy until it is 5 seconds old, so Shutdown's context
// here ends before that: without the proxy closing them, it fails.
func TestShutdownClosesFreshConnections(t *testing.T) {
	tests := []struct {
		name string
		sent string // what the client wrote before the shutdown
	}{
		{"nothing sent", ""},
		{"request line half sent", "GET http://tool.example/ HT"},
		{"headers unfinished", "GET http://tool.example/ HTTP/1.1\r\nHost: tool.example\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, botSetup())
			fresh, err := net.Dial("tcp", h.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			if tc.sent != "" {
				if _, err := io.WriteString(fresh, tc.sent); err != nil {
					t.Fatal(err)
				}
			}
			// The proxy accepts connections in the order they arrive: once
			// a later one is answered, the fresh one has been accepted.
			answered(t, h.addr)

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			if err := h.proxy.Shutdown(ctx); err != nil {
				t.Fatalf("shutdown: %v (a fresh connection held it up)", err)
			}
			if err := fresh.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if n, err := fresh.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
				t.Errorf("fresh connection after shutdown: read %d bytes, err %v; want it closed", n, err)
			}
		})
	}
}

// answered sends an unauthenticated request on a new connection and waits
// for the proxy's 407.
func answered(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET http://tool.example/ HTTP/1.1\r\nHost: tool.example\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "407") {
		t.Fatalf("barrier request: got %q, %v; want a 407", line, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestClosedTunnelsForgotten: the proxy keeps each hijacked connection (a
// CONNECT tunnel) to close it at shutdown, and forgets it once it closes,
// whatever the CONNECT's outcome: a sidecar serving HTTPS for weeks would
// otherwise keep every connection it ever tunnelled.
func TestClosedTunnelsForgotten(t *testing.T) {
	ca, err := proxy.InitCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		scope     []string
		intercept bool
		token     string
		wantErr   bool
	}{
		{"allowed tunnel", []string{"connect"}, false, "s3cret", false},
		{"refused tunnel", []string{"read"}, false, "s3cret", true},
		{"unauthenticated CONNECT", []string{"connect"}, false, "wrong", true},
		{"intercepted tunnel", []string{"read"}, true, "s3cret", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "tool")
			}))
			defer tool.Close()
			s := setup{contracts: []governor.Contract{{AgentID: "bot", Scope: tc.scope}}, tokens: map[string]string{"bot": "s3cret"}}
			tr := tool.Client().Transport.(*http.Transport).Clone()
			if tc.intercept {
				upstreamCAs := x509.NewCertPool()
				upstreamCAs.AddCert(tool.Certificate())
				s.configure = func(o *proxy.Options) { o.CA, o.UpstreamCAs = ca, upstreamCAs }
				trustVigil := x509.NewCertPool()
				trustVigil.AddCert(ca.Certificate())
				tr.TLSClientConfig = &tls.Config{RootCAs: trustVigil}
			}
			h := newHarness(t, s)
			tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: h.addr, User: url.UserPassword("bot", tc.token)})
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			for range 3 {
				resp, err := c.Get(tool.URL + "/a")
				if (err != nil) != tc.wantErr {
					t.Fatalf("through the proxy: err %v, want an error: %v", err, tc.wantErr)
				}
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					// The tunnel stays open, idle in the client's pool:
					// the proxy keeps it to close at shutdown.
					if n := h.proxy.Tunnels(); n != 1 {
						t.Errorf("open tunnels kept: got %d, want 1", n)
					}
				}
				tr.CloseIdleConnections()
			}
			waitFor(t, "the proxy to forget the closed tunnels", func() bool { return h.proxy.Tunnels() == 0 })
		})
	}
}

// TestShutdownClosesOpenTunnels: a CONNECT tunnel still open when the
// proxy shuts down is closed, and forgotten.
func TestShutdownClosesOpenTunnels(t *testing.T) {
	tool := httptest.NewServer(http.NotFoundHandler())
	defer tool.Close()
	h := newHarness(t, setup{contracts: []governor.Contract{{AgentID: "bot", Scope: []string{"connect"}}}, tokens: map[string]string{"bot": "s3cret"}})
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	target := strings.TrimPrefix(tool.URL, "http://")
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+
		"\r\nProxy-Authorization: Basic Ym90OnMzY3JldA==\r\n\r\n"); err != nil { // bot:s3cret
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, " 200 ") {
		t.Fatalf("CONNECT: got %q, %v; want 200", line, err)
	}
	waitFor(t, "the proxy to keep the open tunnel", func() bool { return h.proxy.Tunnels() == 1 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.proxy.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, br); isTimeout(err) {
		t.Error("the open tunnel was not closed by the shutdown")
	}
	if n := h.proxy.Tunnels(); n != 0 {
		t.Errorf("tunnels kept after shutdown: %d", n)
	}
}
