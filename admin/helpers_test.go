package admin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// The test keys, one per role.
const (
	keyViewer   = "k-view"
	keyOperator = "k-ops"
	keyAdmin    = "k-admin"
)

var testKeys = []admin.Key{
	{Key: keyViewer, Principal: "auditor@example.com", Role: admin.RoleViewer},
	{Key: keyOperator, Principal: "alice@example.com", Role: admin.RoleOperator},
	{Key: keyAdmin, Principal: "root@example.com", Role: admin.RoleAdmin},
}

// supportBot is the contract of the agent most tests use.
func supportBot() governor.Contract {
	return governor.Contract{
		AgentID:    "support-bot",
		Archetype:  "customer-experience",
		Team:       "support",
		Scope:      []string{"read", "create", "refund"},
		Boundaries: []string{"api.example.com/*"},
		Authority:  []string{"!has(action.parameters.amount) || action.parameters.amount <= 500"},
		Limits:     governor.Limits{ActionsPerMinute: 120, MaxConcurrent: 10},
		Anchors:    map[string]string{"refund": "return a customer's payment for a damaged or missing order"},
	}
}

// newEngine returns a real engine with the given contracts installed.
func newEngine(t *testing.T, contracts ...governor.Contract) *governor.Engine {
	t.Helper()
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	for _, c := range contracts {
		if err := eng.SetContract(c); err != nil {
			t.Fatalf("SetContract(%s): %v", c.AgentID, err)
		}
	}
	return eng
}

// newServer serves opts (with the test keys when opts.Keys is nil) through
// an httptest server closed at the end of the test.
func newServer(t *testing.T, opts admin.Options) *httptest.Server {
	t.Helper()
	if opts.Keys == nil {
		opts.Keys = testKeys
	}
	s, err := admin.New(opts)
	if err != nil {
		t.Fatalf("admin.New: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// response is what a test request got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

// call sends one request; key "" sends no X-Api-Key.
func call(t *testing.T, srv *httptest.Server, method, path, key, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// decode unmarshals the body into v, failing the test on error.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// wantError checks that r is an error envelope with status and code, and
// returns its body.
func (r response) wantError(t *testing.T, status int, code string) wire.ErrorBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("content type: got %q, want application/json; charset=utf-8", ct)
	}
	var raw struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	r.decode(t, &raw)
	if d := string(raw.Error["details"]); len(d) == 0 || d[0] != '{' {
		t.Errorf("details: got %q, want a JSON object", d)
	}
	var env wire.ErrorResponse
	r.decode(t, &env)
	if env.Error.Code != code {
		t.Errorf("code: got %q, want %q (message %q)", env.Error.Code, code, env.Error.Message)
	}
	if env.Error.Message == "" {
		t.Errorf("message: got empty, want an explanation")
	}
	return env.Error
}

// mustJSON marshals v.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}
