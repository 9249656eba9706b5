package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func TestKeyringLookup(t *testing.T) {
	k := newKeyring([]Key{
		{Key: "alpha-key", Principal: "alice", Role: RoleOperator},
		{Key: "beta-key", Principal: "bob", Role: RoleViewer},
		{Key: "gamma-key", Principal: "carol", Role: RoleAdmin},
	})
	tests := []struct {
		key    string
		want   principal
		wantOK bool
	}{
		{"alpha-key", principal{"alice", RoleOperator}, true},
		{"beta-key", principal{"bob", RoleViewer}, true},
		{"gamma-key", principal{"carol", RoleAdmin}, true},
		{"alpha-ke", principal{}, false},
		{"alpha-key ", principal{}, false},
		{"", principal{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, ok := k.lookup(tt.key)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("lookup(%q): got %v, %v, want %v, %v", tt.key, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRoleAllows(t *testing.T) {
	tests := []struct {
		have, need Role
		want       bool
	}{
		{RoleViewer, RoleViewer, true},
		{RoleViewer, RoleOperator, false},
		{RoleOperator, RoleViewer, true},
		{RoleOperator, RoleAdmin, false},
		{RoleAdmin, RoleOperator, true},
		{"", RoleViewer, false},
		{"root", RoleViewer, false},
	}
	for _, tt := range tests {
		if got := tt.have.allows(tt.need); got != tt.want {
			t.Errorf("%q.allows(%q): got %v, want %v", tt.have, tt.need, got, tt.want)
		}
	}
}

func TestPrincipalInContext(t *testing.T) {
	s := newTestServer(t, Options{Keys: []Key{{Key: "k-ops", Principal: "alice@example.com", Role: RoleOperator}}})
	s.engine.GET("/test/whoami", handle(s.require(RoleViewer)), handle(func(c *gin.Context) error {
		fromReq, okReq := principalFrom(c.Request.Context())
		fromGin, okGin := principalFrom(c)
		return writeJSON(c, http.StatusOK, map[string]any{
			"name": fromReq.Name, "role": fromReq.Role, "ok": okReq,
			"same_via_gin": okGin && fromGin == fromReq,
		})
	}))
	req := httptest.NewRequest(http.MethodGet, "/test/whoami", nil)
	req.Header.Set(apiKeyHeader, "k-ops")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
	want := map[string]any{"name": "alice@example.com", "role": "operator", "ok": true, "same_via_gin": true}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
	if _, ok := principalFrom(context.Background()); ok {
		t.Errorf("principalFrom(background): got ok, want none")
	}
}
