package admin_test

import (
	"net/http"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
)

func TestAuthMatrix(t *testing.T) {
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()), Playground: true})
	evalBody := `{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/orders/1"}}`
	putBody := `{"archetype":"customer-experience","scope":["read"]}`
	tests := []struct {
		name       string
		method     string
		path       string
		key        string
		body       string
		wantStatus int
		wantCode   string // "" for a success
	}{
		{"health without key", http.MethodGet, "/v1/health", "", "", 200, ""},
		{"health with a bad key", http.MethodGet, "/v1/health", "nope", "", 200, ""},
		{"info without key", http.MethodGet, "/v1/info", "", "", 401, wire.CodeUnauthenticated},
		{"info with a bad key", http.MethodGet, "/v1/info", "nope", "", 401, wire.CodeUnauthenticated},
		{"info with a key prefix", http.MethodGet, "/v1/info", "k-", "", 401, wire.CodeUnauthenticated},
		{"openapi without key", http.MethodGet, "/v1/openapi.json", "", "", 401, wire.CodeUnauthenticated},
		{"agents without key", http.MethodGet, "/v1/agents", "", "", 401, wire.CodeUnauthenticated},
		{"evaluate without key", http.MethodPost, "/v1/evaluate", "", evalBody, 401, wire.CodeUnauthenticated},
		{"evaluate with a bad key", http.MethodPost, "/v1/evaluate", "nope", evalBody, 401, wire.CodeUnauthenticated},
		{"viewer reads info", http.MethodGet, "/v1/info", keyViewer, "", 200, ""},
		{"viewer reads agents", http.MethodGet, "/v1/agents", keyViewer, "", 200, ""},
		{"viewer reads an agent", http.MethodGet, "/v1/agents/support-bot", keyViewer, "", 200, ""},
		{"viewer reads archetypes", http.MethodGet, "/v1/archetypes", keyViewer, "", 200, ""},
		{"viewer reads openapi", http.MethodGet, "/v1/openapi.json", keyViewer, "", 200, ""},
		{"viewer evaluates", http.MethodPost, "/v1/evaluate", keyViewer, evalBody, 403, wire.CodeForbidden},
		{"viewer uses the playground", http.MethodPost, "/v1/playground/evaluate", keyViewer, evalBody, 403, wire.CodeForbidden},
		{"viewer puts an agent", http.MethodPut, "/v1/agents/new-bot", keyViewer, putBody, 403, wire.CodeForbidden},
		{"operator evaluates", http.MethodPost, "/v1/evaluate", keyOperator, evalBody, 200, ""},
		{"operator uses the playground", http.MethodPost, "/v1/playground/evaluate", keyOperator, evalBody, 200, ""},
		{"operator puts an agent", http.MethodPut, "/v1/agents/new-bot", keyOperator, putBody, 403, wire.CodeForbidden},
		{"admin evaluates", http.MethodPost, "/v1/evaluate", keyAdmin, evalBody, 200, ""},
		{"admin puts an agent", http.MethodPut, "/v1/agents/new-bot", keyAdmin, putBody, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, srv, tt.method, tt.path, tt.key, tt.body)
			if tt.wantCode != "" {
				res.wantError(t, tt.wantStatus, tt.wantCode)
				return
			}
			if res.status != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", res.status, tt.wantStatus, res.body)
			}
		})
	}
}
