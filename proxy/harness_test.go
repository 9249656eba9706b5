package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/ledger"
	"github.com/vigilhq/vigil/proxy"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// Interfaces the proxy declares, satisfied by the real implementations.
var (
	_ proxy.Governor      = (*governor.Engine)(nil)
	_ proxy.Recorder      = (*ledger.Ledger)(nil)
	_ proxy.Holder        = (*controlplane.Approvals)(nil)
	_ proxy.Observer      = (*controlplane.Plane)(nil)
	_ proxy.EventRecorder = (*controlplane.MemoryStore)(nil)
)

// setup is what a test harness is built from.
type setup struct {
	contracts []governor.Contract
	tokens    map[string]string
	defAgent  string
	routes    []toolcall.Route
	hold      time.Duration
	cfg       *governor.Config
	noLedger  bool
	configure func(*proxy.Options)
}

// harness is a proxy on a real listener over a real governor, a ledger on a
// file store in a temporary directory, an override queue and a control
// plane on an in-memory store.
type harness struct {
	t         *testing.T
	engine    *governor.Engine
	ledger    *ledger.Ledger
	store     *controlplane.MemoryStore
	approvals *controlplane.Approvals
	plane     *controlplane.Plane
	proxy     *proxy.Proxy
	addr      string // host:port of the proxy
}

// sinks publishes overlays to the governor and then to the proxy (what
// cmd/vigil wires).
type sinks []controlplane.Sink

func (s sinks) SetOverlays(o governor.Overlays) {
	for _, k := range s {
		k.SetOverlays(o)
	}
}

type applyOverlays struct{ p **proxy.Proxy }

func (a applyOverlays) SetOverlays(o governor.Overlays) {
	if *a.p != nil {
		(*a.p).ApplyOverlays(o)
	}
}

func newHarness(t *testing.T, s setup) *harness {
	t.Helper()
	cfg := governor.DefaultConfig()
	if s.cfg != nil {
		cfg = *s.cfg
	}
	engine, err := governor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.contracts {
		if err := engine.SetContract(c); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, engine: engine, store: controlplane.NewMemoryStore()}
	opts := proxy.Options{Governor: engine, Tokens: s.tokens, DefaultAgent: s.defAgent, HoldTimeout: s.hold, Events: h.store}
	if !s.noLedger {
		fs, err := ledger.OpenFileStore(t.TempDir(), ledger.FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fs.Close() })
		h.ledger = ledger.New(fs)
		opts.Recorder = h.ledger
	}
	h.plane, err = controlplane.New(controlplane.DefaultConfig(), engine, sinks{engine, applyOverlays{&h.proxy}}, h.store)
	if err != nil {
		t.Fatal(err)
	}
	opts.Observer = h.plane
	apCfg := controlplane.DefaultApprovalConfig()
	apCfg.PollInterval = 50 * time.Millisecond
	h.approvals, err = controlplane.NewApprovals(apCfg, h.store, h.store, engine)
	if err != nil {
		t.Fatal(err)
	}
	opts.Approvals = h.approvals
	if len(s.routes) > 0 {
		opts.Rules, err = toolcall.NewRules(s.routes)
		if err != nil {
			t.Fatal(err)
		}
	}
	if s.configure != nil {
		s.configure(&opts)
	}
	p, err := proxy.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.proxy = p
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	return h
}

// client returns an HTTP client whose proxy is the harness's, with the
// agent's credentials ("" agent: none).
func (h *harness) client(agent, token string) *http.Client {
	u := &url.URL{Scheme: "http", Host: h.addr}
	if agent != "" {
		u.User = url.UserPassword(agent, token)
	}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: false}, Timeout: 20 * time.Second}
}

// do sends a request through the proxy and reads the whole answer.
func do(t *testing.T, c *http.Client, method, rawURL, contentType, body string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, rawURL, r)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return resp, b
}

// upstream is an httptest-style tool server that counts its calls and
// remembers the last request.
type upstream struct {
	calls atomic.Int64
	last  atomic.Pointer[http.Request]
	body  atomic.Pointer[[]byte]
}

func (u *upstream) record(r *http.Request) {
	u.calls.Add(1)
	b, _ := io.ReadAll(r.Body)
	u.body.Store(&b)
	u.last.Store(r)
}

// wantHeader checks one response header.
func wantHeader(t *testing.T, resp *http.Response, name, want string) {
	t.Helper()
	if got := resp.Header.Get(name); got != want {
		t.Errorf("header %s: got %q, want %q", name, got, want)
	}
}

// decodeJSON decodes b into a generic map.
func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, b)
	}
	return m
}

// path walks a decoded JSON value along keys.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// ledgerEntries returns the verdicts of the agent's ledger entries, in order.
func (h *harness) ledgerVerdicts(agent string) []string {
	h.t.Helper()
	recs, err := h.ledger.List(context.Background(), agent, "", 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]string, 0, len(recs))
	for i := len(recs) - 1; i >= 0; i-- { // List is newest first
		out = append(out, recs[i].Verdict)
	}
	return out
}

// waitFor polls cond until it holds or 5 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stringsReader is strings.NewReader, nil for "" (no body).
func stringsReader(s string) io.Reader {
	if s == "" {
		return nil
	}
	return strings.NewReader(s)
}

// readAll reads and closes a response body.
func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
