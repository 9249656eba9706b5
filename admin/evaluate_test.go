package admin_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// evaluationKeys are the fields of the verdict object.
var evaluationKeys = []string{
	"action_id", "action_to_pass", "advisory", "agent_id", "decision", "dimension_scores", "directives",
	"evaluation_time_us", "ledger", "modifications", "reasoning", "reversibility", "tier", "ucs", "vetoes",
}

func TestEvaluateVerdicts(t *testing.T) {
	sourceCheck := governor.Contract{AgentID: "source-check", Scope: []string{"read"},
		Authority: []string{"action.source == 'api'"}}
	eng := newEngine(t, supportBot(), sourceCheck)
	srv := newServer(t, admin.Options{Governor: eng})
	tests := []struct {
		name         string
		body         string
		wantDecision string
		wantTier     int
		wantVeto     string // a veto that must be listed ("" for none at all)
	}{
		{
			name:         "allowed read",
			body:         `{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/orders/42"},"context":{"instruction":"look up the order","origin":"user_request"}}`,
			wantDecision: "ALLOW", wantTier: 2,
		},
		{
			name:         "out of scope",
			body:         `{"agent_id":"support-bot","action":{"type":"delete","target":"api.example.com/orders/42"}}`,
			wantDecision: "DENY", wantTier: 1, wantVeto: "scope_compliance",
		},
		{
			name:         "action source is api",
			body:         `{"agent_id":"source-check","action":{"type":"read","target":"x"}}`,
			wantDecision: "ALLOW", wantTier: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator, tt.body)
			if res.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
			}
			if ct := res.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("content type: got %q, want application/json; charset=utf-8", ct)
			}
			var raw map[string]any
			res.decode(t, &raw)
			var keys []string
			for k := range raw {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, evaluationKeys) {
				t.Errorf("fields: got %v, want %v", keys, evaluationKeys)
			}
			if raw["ledger"] != nil {
				t.Errorf("ledger: got %v, want null", raw["ledger"])
			}
			for _, k := range []string{"vetoes", "modifications", "directives", "dimension_scores"} {
				if _, ok := raw[k].([]any); !ok {
					t.Errorf("%s: got %v, want a JSON array", k, raw[k])
				}
			}
			var ev wire.Evaluation
			res.decode(t, &ev)
			if ev.Decision != tt.wantDecision {
				t.Errorf("decision: got %s, want %s (reasoning %q)", ev.Decision, tt.wantDecision, ev.Reasoning)
			}
			if ev.Tier != tt.wantTier {
				t.Errorf("tier: got %d, want %d", ev.Tier, tt.wantTier)
			}
			if tt.wantVeto == "" && len(ev.Vetoes) != 0 {
				t.Errorf("vetoes: got %v, want none", ev.Vetoes)
			}
			if tt.wantVeto != "" && !slices.Contains(ev.Vetoes, tt.wantVeto) {
				t.Errorf("vetoes: got %v, want %s among them", ev.Vetoes, tt.wantVeto)
			}
			if ev.ActionID == "" || ev.AgentID == "" || ev.Reasoning == "" {
				t.Errorf("ids and reasoning: got action_id %q agent_id %q reasoning %q, want all set", ev.ActionID, ev.AgentID, ev.Reasoning)
			}
			if len(ev.DimensionScores) != 13 {
				t.Errorf("dimension_scores: got %d, want 13", len(ev.DimensionScores))
			}
			if ev.EvaluationTimeUS < 0 {
				t.Errorf("evaluation_time_us: got %d, want >= 0", ev.EvaluationTimeUS)
			}
			if ev.Reversibility.Level == "" {
				t.Errorf("reversibility.level: got empty, want a level")
			}
			switch ev.Decision {
			case "ALLOW":
				if ev.ActionToPass.MarginToDeny == nil {
					t.Errorf("action_to_pass.margin_to_deny: got none, want a margin for ALLOW")
				}
			case "DENY":
				if ev.UCS != 0 {
					t.Errorf("ucs: got %v, want 0 for a veto", ev.UCS)
				}
			}
		})
	}
}

func TestEvaluateRecordsState(t *testing.T) {
	eng := newEngine(t, supportBot())
	srv := newServer(t, admin.Options{Governor: eng})
	before, err := eng.Status("support-bot")
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	res := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator,
		`{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/orders/42"}}`)
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
	}
	after, err := eng.Status("support-bot")
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if after.Observations != before.Observations+1 {
		t.Errorf("observations: got %d, want %d", after.Observations, before.Observations+1)
	}
}

func TestEvaluateBadRequests(t *testing.T) {
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot())})
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   string
		wantField  string // "" when details.field must be absent
	}{
		{"empty body", "", 400, wire.CodeInvalidRequest, ""},
		{"blank body", "  \n ", 400, wire.CodeInvalidRequest, ""},
		{"malformed JSON", `{"agent_id": support-bot}`, 400, wire.CodeInvalidRequest, ""},
		{"truncated JSON", `{"agent_id": "support-bot"`, 400, wire.CodeInvalidRequest, ""},
		{"array body", `[1, 2]`, 400, wire.CodeInvalidRequest, ""},
		{"string body", `"hello"`, 400, wire.CodeInvalidRequest, ""},
		{"trailing data", `{"agent_id":"support-bot","action":{"type":"read"}} {}`, 400, wire.CodeInvalidRequest, ""},
		{"missing agent_id", `{"action":{"type":"read"}}`, 400, wire.CodeInvalidRequest, "agent_id"},
		{"blank agent_id", `{"agent_id":"  ","action":{"type":"read"}}`, 400, wire.CodeInvalidRequest, "agent_id"},
		{"agent_id number", `{"agent_id":42,"action":{"type":"read"}}`, 400, wire.CodeInvalidRequest, "agent_id"},
		{"missing action", `{"agent_id":"support-bot"}`, 400, wire.CodeInvalidRequest, "action"},
		{"null action", `{"agent_id":"support-bot","action":null}`, 400, wire.CodeInvalidRequest, "action"},
		{"action array", `{"agent_id":"support-bot","action":["read"]}`, 400, wire.CodeInvalidRequest, "action"},
		{"missing action type", `{"agent_id":"support-bot","action":{"target":"x"}}`, 400, wire.CodeInvalidRequest, "action.type"},
		{"action type number", `{"agent_id":"support-bot","action":{"type":7}}`, 400, wire.CodeInvalidRequest, "action.type"},
		{"target number", `{"agent_id":"support-bot","action":{"type":"read","target":7}}`, 400, wire.CodeInvalidRequest, "action.target"},
		{"parameters string", `{"agent_id":"support-bot","action":{"type":"read","parameters":"amount=5"}}`, 400, wire.CodeInvalidRequest, "action.parameters"},
		{"parameters array", `{"agent_id":"support-bot","action":{"type":"read","parameters":[1]}}`, 400, wire.CodeInvalidRequest, "action.parameters"},
		{"context string", `{"agent_id":"support-bot","action":{"type":"read"},"context":"urgent"}`, 400, wire.CodeInvalidRequest, "context"},
		{"fractional delegation depth", `{"agent_id":"support-bot","action":{"type":"read"},"context":{"delegation_depth":1.5}}`, 400, wire.CodeInvalidRequest, "context.delegation_depth"},
		{"negative delegation depth", `{"agent_id":"support-bot","action":{"type":"read"},"context":{"delegation_depth":-1}}`, 400, wire.CodeInvalidRequest, "context.delegation_depth"},
		{"negative child agents", `{"agent_id":"support-bot","action":{"type":"read"},"context":{"child_agents":-2}}`, 400, wire.CodeInvalidRequest, "context.child_agents"},
		{"unknown origin", `{"agent_id":"support-bot","action":{"type":"read"},"context":{"origin":"moon"}}`, 400, wire.CodeInvalidRequest, "context.origin"},
		{"unknown top-level field", `{"agent_id":"support-bot","action":{"type":"read"},"priority":1}`, 400, wire.CodeInvalidRequest, "priority"},
		{"unknown action field", `{"agent_id":"support-bot","action":{"type":"read","verb":"GET"}}`, 400, wire.CodeInvalidRequest, "action.verb"},
		{"unknown context field", `{"agent_id":"support-bot","action":{"type":"read"},"context":{"mood":"calm"}}`, 400, wire.CodeInvalidRequest, "context.mood"},
		{"unknown agent", `{"agent_id":"ghost","action":{"type":"read"}}`, 404, wire.CodeNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator, tt.body)
			body := res.wantError(t, tt.wantStatus, tt.wantCode)
			got, _ := body.Details["field"].(string)
			if got != tt.wantField {
				t.Errorf("details.field: got %q, want %q (message %q)", got, tt.wantField, body.Message)
			}
		})
	}
}

func TestEvaluateBodyLimit(t *testing.T) {
	s, err := admin.New(admin.Options{Governor: newEngine(t, supportBot()), Keys: testKeys})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	huge := `{"agent_id":"support-bot","action":{"type":"read","parameters":{"blob":"` + strings.Repeat("x", 2<<20) + `"}}}`
	tests := []struct {
		name          string
		contentLength int64 // -1: unknown (chunked)
	}{
		{"declared length", int64(len(huge))},
		{"unknown length", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/v1/evaluate", io.NopCloser(io.MultiReader(bytes.NewBufferString(huge))))
			req.ContentLength = tt.contentLength
			req.Header.Set("X-Api-Key", keyOperator)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			res := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
			res.wantError(t, http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge)
		})
	}
}
