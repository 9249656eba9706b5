package admin_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
)

func TestHealth(t *testing.T) {
	srv := newServer(t, admin.Options{Governor: newEngine(t)})
	res := call(t, srv, http.MethodGet, "/v1/health", "", "")
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200", res.status)
	}
	if got := strings.TrimSpace(string(res.body)); got != `{"status":"ok"}` {
		t.Errorf("body: got %s, want {\"status\":\"ok\"}", got)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("content type: got %q, want application/json; charset=utf-8", ct)
	}
}

// TestHealthChecks: while a check fails, /v1/health answers 503 degraded
// with every check's result; once it passes again, 200 ok.
func TestHealthChecks(t *testing.T) {
	var mu sync.Mutex
	redisErr := errors.New("circuit open")
	check := func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return redisErr
	}
	srv := newServer(t, admin.Options{Governor: newEngine(t), Checks: map[string]func(context.Context) error{
		"redis": check,
		"disk":  func(ctx context.Context) error { return ctx.Err() },
	}})
	res := call(t, srv, http.MethodGet, "/v1/health", "", "")
	if res.status != http.StatusServiceUnavailable {
		t.Fatalf("status with a failing check: got %d, want 503", res.status)
	}
	if got, want := strings.TrimSpace(string(res.body)), `{"status":"degraded","checks":{"disk":"ok","redis":"circuit open"}}`; got != want {
		t.Errorf("body: got %s, want %s", got, want)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("content type: got %q, want application/json; charset=utf-8", ct)
	}

	mu.Lock()
	redisErr = nil
	mu.Unlock()
	res = call(t, srv, http.MethodGet, "/v1/health", "", "")
	if res.status != http.StatusOK || strings.TrimSpace(string(res.body)) != `{"status":"ok"}` {
		t.Errorf("checks passing: got %d %s, want 200 {\"status\":\"ok\"}", res.status, res.body)
	}
}

func TestHealthChecksValidated(t *testing.T) {
	for name, checks := range map[string]map[string]func(context.Context) error{
		"nil check":  {"redis": nil},
		"empty name": {" ": func(context.Context) error { return nil }},
	} {
		if _, err := admin.New(admin.Options{Governor: newEngine(t), Checks: checks}); err == nil {
			t.Errorf("%s: New got nil, want an error", name)
		}
	}
}

func TestInfo(t *testing.T) {
	started := time.Date(2026, 3, 1, 12, 30, 45, 123456789, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		info admin.Info
		want wire.Info
	}{
		{
			name: "configured",
			info: admin.Info{Version: "1.2.3", StartedAt: started, Store: "redis", ControlPlaneEnabled: true,
				LedgerEnabled: true, ProxyAddress: "127.0.0.1:8421", Features: []string{"playground", "ui"}},
			want: wire.Info{Name: "vigil", Version: "1.2.3", StartedAt: "2026-03-01T11:30:45.123Z", Store: "redis",
				ControlPlaneEnabled: true, LedgerEnabled: true, ProxyAddress: "127.0.0.1:8421", Features: []string{"playground", "ui"}},
		},
		{
			name: "defaults",
			info: admin.Info{StartedAt: started},
			want: wire.Info{Name: "vigil", StartedAt: "2026-03-01T11:30:45.123Z", Store: "embedded", Features: []string{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, admin.Options{Governor: newEngine(t), Info: tt.info})
			res := call(t, srv, http.MethodGet, "/v1/info", keyViewer, "")
			if res.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
			}
			if got, want := strings.TrimSpace(string(res.body)), mustJSON(t, tt.want); got != want {
				t.Errorf("body: got %s, want %s", got, want)
			}
		})
	}
	t.Run("zero start time", func(t *testing.T) {
		srv := newServer(t, admin.Options{Governor: newEngine(t)})
		var info wire.Info
		call(t, srv, http.MethodGet, "/v1/info", keyViewer, "").decode(t, &info)
		if !timestampRE.MatchString(info.StartedAt) {
			t.Errorf("started_at: got %q, want an RFC 3339 UTC timestamp with milliseconds", info.StartedAt)
		}
	})
}

func TestRoutingErrors(t *testing.T) {
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot())})
	tests := []struct {
		name       string
		method     string
		path       string
		key        string
		wantStatus int
		wantCode   string
		wantAllow  string
	}{
		{"unknown path", http.MethodGet, "/v1/nothing", keyViewer, 404, wire.CodeNotFound, ""},
		{"unknown path without key", http.MethodGet, "/v1/nothing", "", 404, wire.CodeNotFound, ""},
		{"root", http.MethodGet, "/", "", 404, wire.CodeNotFound, ""},
		{"trailing slash", http.MethodGet, "/v1/agents/", keyViewer, 404, wire.CodeNotFound, ""},
		{"wrong method on agent", http.MethodDelete, "/v1/agents/support-bot", keyAdmin, 405, wire.CodeMethodNotAllowed, "GET, PUT"},
		{"wrong method on evaluate", http.MethodGet, "/v1/evaluate", keyOperator, 405, wire.CodeMethodNotAllowed, "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, srv, tt.method, tt.path, tt.key, "")
			res.wantError(t, tt.wantStatus, tt.wantCode)
			if got := res.header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow: got %q, want %q", got, tt.wantAllow)
			}
		})
	}
}
