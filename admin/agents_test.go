package admin_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// timestampRE matches the wire's timestamps: RFC 3339, UTC, milliseconds.
var timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

func TestListAgents(t *testing.T) {
	zeta := governor.Contract{AgentID: "zeta", Team: "z", Scope: []string{"read"}}
	alpha := governor.Contract{AgentID: "alpha", Archetype: "data-processing", Team: "a"}
	srv := newServer(t, admin.Options{Governor: newEngine(t, zeta, supportBot(), alpha)})

	res := call(t, srv, http.MethodGet, "/v1/agents", keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
	}
	var list wire.AgentList
	res.decode(t, &list)
	var ids []string
	for _, a := range list.Agents {
		ids = append(ids, a.AgentID)
	}
	if want := []string{"alpha", "support-bot", "zeta"}; !slices.Equal(ids, want) {
		t.Fatalf("agent ids: got %v, want %v", ids, want)
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"alpha archetype", list.Agents[0].Archetype, "data-processing"},
		{"alpha team", list.Agents[0].Team, "a"},
		{"alpha observations", list.Agents[0].Observations, 0},
		{"alpha severity", list.Agents[0].Severity, "none"},
		{"support-bot trust", list.Agents[1].TrustScore, 0.5},
		{"zeta quarantined", list.Agents[2].Quarantined, false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	t.Run("empty fleet", func(t *testing.T) {
		srv := newServer(t, admin.Options{Governor: newEngine(t)})
		res := call(t, srv, http.MethodGet, "/v1/agents", keyViewer, "")
		if got := strings.TrimSpace(string(res.body)); got != `{"agents":[]}` {
			t.Errorf("body: got %s, want {\"agents\":[]}", got)
		}
	})
}

func TestGetAgent(t *testing.T) {
	c := supportBot()
	c.TimeWindows = map[string]governor.TimeWindow{"refund": {StartHour: 0, EndHour: 24}}
	eng := newEngine(t, c)
	srv := newServer(t, admin.Options{Governor: eng})

	res := call(t, srv, http.MethodGet, "/v1/agents/support-bot", keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
	}
	if strings.Contains(strings.ToLower(string(res.body)), "token") {
		t.Errorf("body mentions a token: %s", res.body)
	}
	var raw map[string]any
	res.decode(t, &raw)
	wantKeys := []string{"agent_id", "alerts", "archetype", "contract", "directives", "drift", "fingerprint",
		"fingerprint_confidence", "in_flight", "last_evaluation", "observations", "prior", "quarantined",
		"suspended", "team", "thresholds", "trust", "upstream_failures"}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("fields: got %v, want %v", keys, wantKeys)
	}
	if raw["last_evaluation"] != nil {
		t.Errorf("last_evaluation: got %v, want null before any evaluation", raw["last_evaluation"])
	}
	var a wire.Agent
	res.decode(t, &a)
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"agent_id", a.AgentID, "support-bot"},
		{"prior", a.Prior, "customer-experience"},
		{"contract scope", strings.Join(a.Contract.Scope, ","), "read,create,refund"},
		{"contract authority", len(a.Contract.Authority), 1},
		{"contract limits", a.Contract.Limits.ActionsPerMinute, 120},
		{"contract time window", a.Contract.TimeWindows["refund"].EndHour, 24},
		{"contract anchors", a.Contract.Anchors["refund"] != "", true},
		{"trust score", a.Trust.Score, 0.5},
		{"thresholds", a.Thresholds.Critical, governor.DefaultConfig().Thresholds.Critical},
		{"fingerprint seeded from the prior", len(a.Fingerprint.Action) > 0, true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	t.Run("after an evaluation", func(t *testing.T) {
		res := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator,
			`{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/orders/1"}}`)
		if res.status != http.StatusOK {
			t.Fatalf("evaluate status: got %d, want 200 (body %s)", res.status, res.body)
		}
		res = call(t, srv, http.MethodGet, "/v1/agents/support-bot", keyViewer, "")
		var a wire.Agent
		res.decode(t, &a)
		if a.LastEvaluation == nil || !timestampRE.MatchString(*a.LastEvaluation) {
			t.Errorf("last_evaluation: got %v, want an RFC 3339 UTC timestamp with milliseconds", a.LastEvaluation)
		}
		if a.Observations != 1 {
			t.Errorf("observations: got %d, want 1", a.Observations)
		}
	})
	t.Run("unknown agent", func(t *testing.T) {
		res := call(t, srv, http.MethodGet, "/v1/agents/ghost", keyViewer, "")
		res.wantError(t, http.StatusNotFound, wire.CodeNotFound)
	})
}

func TestPutAgent(t *testing.T) {
	eng := newEngine(t, supportBot())
	srv := newServer(t, admin.Options{Governor: eng})
	tests := []struct {
		name       string
		path       string
		body       string
		wantStatus int
		wantField  string // for errors: details.field
		wantInMsg  string // for errors: a substring of the message
	}{
		{name: "new agent", path: "/v1/agents/new-bot",
			body:       `{"archetype":"financial-transactions","team":"payments","scope":["read","refund"],"boundaries":["payments/*"],"authority":["action.type != 'refund' || action.parameters.amount <= 100"],"time_windows":{"refund":{"start_hour":9,"end_hour":17,"timezone":"Europe/Paris"}},"limits":{"actions_per_minute":60},"anchors":{"refund":"return a payment"}}`,
			wantStatus: 200},
		{name: "replace an existing contract", path: "/v1/agents/support-bot", body: `{"scope":["*"]}`, wantStatus: 200},
		{name: "empty contract", path: "/v1/agents/bare-bot", body: `{}`, wantStatus: 200},
		{name: "bad CEL", path: "/v1/agents/new-bot", body: `{"authority":["action.type ==="]}`,
			wantStatus: 400, wantField: "authority[0]"},
		{name: "unknown archetype", path: "/v1/agents/new-bot", body: `{"archetype":"financial-transaction"}`,
			wantStatus: 400, wantField: "archetype", wantInMsg: `did you mean "financial-transactions"`},
		{name: "bad window hour", path: "/v1/agents/new-bot", body: `{"time_windows":{"deploy":{"start_hour":25,"end_hour":3}}}`,
			wantStatus: 400, wantField: "time_windows.deploy.start_hour"},
		{name: "window hour as string", path: "/v1/agents/new-bot", body: `{"time_windows":{"deploy":{"start_hour":"9","end_hour":17}}}`,
			wantStatus: 400, wantField: "time_windows.deploy.start_hour"},
		{name: "negative limit", path: "/v1/agents/new-bot", body: `{"limits":{"max_concurrent":-1}}`,
			wantStatus: 400, wantField: "limits.max_concurrent"},
		{name: "unknown field", path: "/v1/agents/new-bot", body: `{"token":"s3cret"}`,
			wantStatus: 400, wantField: "token"},
		{name: "unknown nested field", path: "/v1/agents/new-bot", body: `{"time_windows":{"deploy":{"start_hour":9,"end_hour":17,"days":[1]}}}`,
			wantStatus: 400, wantField: "time_windows.deploy.days"},
		{name: "scope not a list", path: "/v1/agents/new-bot", body: `{"scope":"read"}`,
			wantStatus: 400, wantField: "scope"},
		{name: "empty body", path: "/v1/agents/new-bot", body: ``, wantStatus: 400},
		{name: "blank agent id", path: "/v1/agents/%20", body: `{}`, wantStatus: 400, wantField: "agent_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, srv, http.MethodPut, tt.path, keyAdmin, tt.body)
			if tt.wantStatus != http.StatusOK {
				got := res.wantError(t, tt.wantStatus, wire.CodeInvalidRequest)
				if f, _ := got.Details["field"].(string); f != tt.wantField {
					t.Errorf("details.field: got %q, want %q (message %q)", f, tt.wantField, got.Message)
				}
				if !strings.Contains(got.Message, tt.wantInMsg) {
					t.Errorf("message: got %q, want it to contain %q", got.Message, tt.wantInMsg)
				}
				return
			}
			if res.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
			}
			var a wire.Agent
			res.decode(t, &a)
			id := strings.TrimPrefix(tt.path, "/v1/agents/")
			if a.AgentID != id {
				t.Errorf("agent_id: got %q, want %q", a.AgentID, id)
			}
			st, err := eng.Status(id)
			if err != nil {
				t.Fatalf("Status(%s): %v", id, err)
			}
			if got, want := wire.NewContract(st.Contract), a.Contract; mustJSON(t, got) != mustJSON(t, want) {
				t.Errorf("contract: got %s from the engine, want %s as answered", mustJSON(t, got), mustJSON(t, want))
			}
		})
	}

	t.Run("round trip", func(t *testing.T) {
		res := call(t, srv, http.MethodGet, "/v1/agents/new-bot", keyViewer, "")
		var a wire.Agent
		res.decode(t, &a)
		body := mustJSON(t, a.Contract)
		res = call(t, srv, http.MethodPut, "/v1/agents/new-bot", keyAdmin, body)
		if res.status != http.StatusOK {
			t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
		}
		var b wire.Agent
		res.decode(t, &b)
		if got := mustJSON(t, b.Contract); got != body {
			t.Errorf("contract after PUT of the GET contract: got %s, want %s", got, body)
		}
		if b.Contract.TimeWindows["refund"].Timezone != "Europe/Paris" {
			t.Errorf("time window timezone: got %q, want Europe/Paris", b.Contract.TimeWindows["refund"].Timezone)
		}
	})
	t.Run("existing agent keeps its state", func(t *testing.T) {
		res := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator, `{"agent_id":"bare-bot","action":{"type":"read"}}`)
		if res.status != http.StatusOK {
			t.Fatalf("evaluate status: got %d, want 200 (body %s)", res.status, res.body)
		}
		res = call(t, srv, http.MethodPut, "/v1/agents/bare-bot", keyAdmin, `{"team":"ops"}`)
		var a wire.Agent
		res.decode(t, &a)
		if a.Observations != 1 || a.Team != "ops" {
			t.Errorf("after PUT: got observations %d team %q, want 1 and ops", a.Observations, a.Team)
		}
	})
}
