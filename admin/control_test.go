package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// directiveKeys are the fields of DIRECTIVE.
var directiveKeys = []string{
	"duration_seconds", "expired_at", "expires_at", "id", "issued_at", "operator", "parameters", "reason",
	"released_agents", "resolved_agents", "status", "target", "type",
}

const bodyQuarantine = `{"type":"quarantine","target":{"agent_ids":["support-bot"]},"reason":"suspicious refunds"}`

// fakeClock is a settable clock for the control plane.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// controlFixture is an admin server over a real engine (support-bot and
// quiet-bot) and a real control plane over a memory store.
type controlFixture struct {
	srv   *httptest.Server
	eng   *governor.Engine
	plane *controlplane.Plane
}

func newControlFixture(t *testing.T, cfg controlplane.Config, opts ...controlplane.Option) controlFixture {
	t.Helper()
	eng := newEngine(t, supportBot(), quietBot())
	plane, err := controlplane.New(cfg, eng, eng, controlplane.NewMemoryStore(), opts...)
	if err != nil {
		t.Fatalf("controlplane.New: %v", err)
	}
	return controlFixture{srv: newServer(t, admin.Options{Governor: eng, Control: plane}), eng: eng, plane: plane}
}

// issue posts body with key and returns the directive of a 201 answer.
func (f controlFixture) issue(t *testing.T, key, body string) wire.Directive {
	t.Helper()
	res := call(t, f.srv, http.MethodPost, "/v1/control/directives", key, body)
	if res.status != http.StatusCreated {
		t.Fatalf("issue: got %d, want 201 (body %s)", res.status, res.body)
	}
	var out wire.DirectiveResult
	res.decode(t, &out)
	if !out.Success {
		t.Errorf("success: got false, want true")
	}
	return out.Directive
}

func (f controlFixture) decision(t *testing.T, body string) wire.Evaluation {
	t.Helper()
	return evaluateOK(t, f.srv, body)
}

func (f controlFixture) events(t *testing.T, query string) []wire.ProvenanceEvent {
	t.Helper()
	res := call(t, f.srv, http.MethodGet, "/v1/provenance"+query, keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("provenance: got %d, want 200 (body %s)", res.status, res.body)
	}
	var out wire.ProvenanceList
	res.decode(t, &out)
	return out.Events
}

func sortedKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestQuarantineThroughTheAPI(t *testing.T) {
	f := newControlFixture(t, controlplane.DefaultConfig())
	if ev := f.decision(t, bodyRead); ev.Decision != "ALLOW" {
		t.Fatalf("before: got %s, want ALLOW (%s)", ev.Decision, ev.Reasoning)
	}

	res := call(t, f.srv, http.MethodPost, "/v1/control/directives", keyOperator, bodyQuarantine)
	if res.status != http.StatusCreated {
		t.Fatalf("issue: got %d, want 201 (body %s)", res.status, res.body)
	}
	if got := sortedKeys(t, res.body); !slices.Equal(got, []string{"directive", "success"}) {
		t.Errorf("answer fields: got %v, want [directive success]", got)
	}
	var raw map[string]json.RawMessage
	res.decode(t, &raw)
	if got := sortedKeys(t, raw["directive"]); !slices.Equal(got, directiveKeys) {
		t.Errorf("directive fields: got %v, want %v", got, directiveKeys)
	}
	for _, k := range []string{"duration_seconds", "expires_at", "expired_at"} {
		if s := strings.ReplaceAll(string(raw["directive"]), " ", ""); !strings.Contains(s, `"`+k+`":null`) {
			t.Errorf("%s: got %s, want null", k, raw["directive"])
		}
	}
	var issued wire.DirectiveResult
	res.decode(t, &issued)
	d := issued.Directive
	if !strings.HasPrefix(d.ID, "dir_") || d.Type != "quarantine" || d.Status != "active" || d.Operator != "alice@example.com" ||
		d.Reason != "suspicious refunds" || !slices.Equal(d.ResolvedAgents, []string{"support-bot"}) || d.ReleasedAgents == nil {
		t.Errorf("directive: got %+v, want an active quarantine of support-bot by alice@example.com", d)
	}
	if p := d.Parameters; p.Factor != nil || p.Invariants != nil || p.Term != nil || p.Message != nil {
		t.Errorf("parameters: got %+v, want none", d.Parameters)
	}
	if _, err := time.Parse(wire.TimeFormat, d.IssuedAt); err != nil {
		t.Errorf("issued_at %q: %v", d.IssuedAt, err)
	}

	ev := f.decision(t, bodyRead)
	if ev.Decision != "ESCALATE" || !slices.Contains(ev.Directives, d.ID) {
		t.Errorf("quarantined: got %s with directives %v, want ESCALATE naming %s", ev.Decision, ev.Directives, d.ID)
	}

	// Listed, and readable alone.
	var list wire.DirectiveList
	call(t, f.srv, http.MethodGet, "/v1/control/directives", keyViewer, "").decode(t, &list)
	if len(list.Directives) != 1 || list.Directives[0].ID != d.ID {
		t.Errorf("list: got %+v, want the quarantine", list.Directives)
	}
	one := call(t, f.srv, http.MethodGet, "/v1/control/directives/"+d.ID, keyViewer, "")
	var got wire.Directive
	one.decode(t, &got)
	if one.status != http.StatusOK || got.ID != d.ID || got.Status != "active" {
		t.Errorf("get: got %d %+v, want the active quarantine", one.status, got)
	}

	// DELETE expires it and the agent is allowed again.
	del := call(t, f.srv, http.MethodDelete, "/v1/control/directives/"+d.ID, keyOperator, "")
	if del.status != http.StatusOK {
		t.Fatalf("delete: got %d, want 200 (body %s)", del.status, del.body)
	}
	var expired wire.DirectiveResult
	del.decode(t, &expired)
	if !expired.Success || expired.Directive.Status != "expired" || expired.Directive.ExpiredAt == nil {
		t.Errorf("delete: got %+v, want success and an expired directive with expired_at", expired)
	}
	if ev := f.decision(t, bodyRead); ev.Decision != "ALLOW" {
		t.Errorf("after delete: got %s, want ALLOW (%s)", ev.Decision, ev.Reasoning)
	}
	call(t, f.srv, http.MethodDelete, "/v1/control/directives/"+d.ID, keyOperator, "").wantError(t, http.StatusConflict, wire.CodeConflict)
	call(t, f.srv, http.MethodDelete, "/v1/control/directives/dir_nope", keyOperator, "").wantError(t, http.StatusNotFound, wire.CodeNotFound)
	call(t, f.srv, http.MethodGet, "/v1/control/directives/dir_nope", keyViewer, "").wantError(t, http.StatusNotFound, wire.CodeNotFound)

	// An expired directive is still readable, and no longer listed.
	call(t, f.srv, http.MethodGet, "/v1/control/directives/"+d.ID, keyViewer, "").decode(t, &got)
	if got.Status != "expired" {
		t.Errorf("get after delete: got status %q, want expired", got.Status)
	}
	call(t, f.srv, http.MethodGet, "/v1/control/directives", keyViewer, "").decode(t, &list)
	if len(list.Directives) != 0 {
		t.Errorf("list after delete: got %d directives, want none", len(list.Directives))
	}

	// Provenance: issued and expired, newest first, by the key's principal.
	events := f.events(t, "?target="+d.ID)
	if len(events) != 2 {
		t.Fatalf("provenance: got %d events, want 2: %+v", len(events), events)
	}
	exp, iss := events[0], events[1]
	if iss.ContextCode != controlplane.CodeDirectiveIssued || iss.Actor != "alice@example.com" || iss.ActorType != "operator" ||
		iss.Target != d.ID || iss.Reason != "suspicious refunds" || iss.Details["type"] != "quarantine" {
		t.Errorf("issued event: got %+v, want CONTROL.DIRECTIVE_ISSUED by alice@example.com (operator) on %s", iss, d.ID)
	}
	if exp.ContextCode != controlplane.CodeDirectiveExpired || exp.Actor != "alice@example.com" || exp.ActorType != "operator" {
		t.Errorf("expired event: got %+v, want CONTROL.DIRECTIVE_EXPIRED by alice@example.com", exp)
	}
	if _, err := time.Parse(wire.TimeFormat, iss.Timestamp); err != nil {
		t.Errorf("timestamp %q: %v", iss.Timestamp, err)
	}
	if got := f.events(t, "?context_code=CONTROL.DIRECTIVE_ISSUED&actor=alice@example.com"); len(got) != 1 || got[0].ID != iss.ID {
		t.Errorf("filtered provenance: got %+v, want the issued event", got)
	}
	if got := f.events(t, "?limit=1"); len(got) != 1 || got[0].ID != exp.ID {
		t.Errorf("limit 1: got %+v, want the newest event", got)
	}
	if got := f.events(t, "?limit=999999999999999999999"); len(got) != 2 {
		t.Errorf("huge limit: got %d events, want 2 (clamped)", len(got))
	}
	if got := f.events(t, "?actor=nobody"); got == nil || len(got) != 0 {
		t.Errorf("no match: got %v, want []", got)
	}
}

func TestTightenHalvesThresholds(t *testing.T) {
	f := newControlFixture(t, controlplane.DefaultConfig())
	var before, after wire.Agent
	call(t, f.srv, http.MethodGet, "/v1/agents/support-bot", keyViewer, "").decode(t, &before)
	d := f.issue(t, keyOperator, `{"type":"tighten","target":{"agent_ids":["support-bot"]},"duration_seconds":1800,"parameters":{"factor":0.5}}`)
	if d.Parameters.Factor == nil || *d.Parameters.Factor != 0.5 || d.Parameters.Invariants != nil || d.Parameters.Term != nil {
		t.Errorf("parameters: got %+v, want only factor 0.5", d.Parameters)
	}
	if d.DurationSeconds == nil || *d.DurationSeconds != 1800 || d.ExpiresAt == nil {
		t.Fatalf("duration: got %v, expires_at %v; want 1800 and a time", d.DurationSeconds, d.ExpiresAt)
	}
	issued, _ := time.Parse(wire.TimeFormat, d.IssuedAt)
	expires, _ := time.Parse(wire.TimeFormat, *d.ExpiresAt)
	if got := expires.Sub(issued); got != 1800*time.Second {
		t.Errorf("expires_at - issued_at: got %v, want 30m", got)
	}
	call(t, f.srv, http.MethodGet, "/v1/agents/support-bot", keyViewer, "").decode(t, &after)
	want := wire.Thresholds{Low: before.Thresholds.Low / 2, Moderate: before.Thresholds.Moderate / 2,
		High: before.Thresholds.High / 2, Critical: before.Thresholds.Critical / 2}
	if after.Thresholds != want || !slices.Contains(after.Directives, d.ID) {
		t.Errorf("thresholds: got %+v (directives %v), want %+v naming %s", after.Thresholds, after.Directives, want, d.ID)
	}
}

func TestEnforceInvariantDenies(t *testing.T) {
	f := newControlFixture(t, controlplane.DefaultConfig())
	d := f.issue(t, keyOperator, `{"type":"enforce","target":{"team":"support"},
		"parameters":{"invariants":[{"name":"no-reads","expr":"action.type != 'read'"}]}}`)
	if len(d.Parameters.Invariants) != 1 || d.Parameters.Invariants[0] != (wire.DirectiveInvariant{Name: "no-reads", Expr: "action.type != 'read'"}) {
		t.Errorf("parameters: got %+v, want the invariant", d.Parameters)
	}
	if !slices.Equal(d.ResolvedAgents, []string{"support-bot"}) || d.Target.Team != "support" || d.Target.AgentIDs == nil {
		t.Errorf("target: got %+v resolving %v, want team support resolving support-bot", d.Target, d.ResolvedAgents)
	}
	ev := f.decision(t, bodyRead)
	if ev.Decision != "DENY" || !slices.Contains(ev.Vetoes, "invariant:no-reads") {
		t.Errorf("enforced: got %s vetoes %v, want DENY with invariant:no-reads", ev.Decision, ev.Vetoes)
	}
}

func TestDirectiveOperator(t *testing.T) {
	f := newControlFixture(t, controlplane.DefaultConfig())
	withOperator := func(op string) string {
		return `{"type":"quarantine","target":{"agent_ids":["support-bot"]},"operator":"` + op + `"}`
	}
	e := call(t, f.srv, http.MethodPost, "/v1/control/directives", keyOperator, withOperator("bob@example.com")).
		wantError(t, http.StatusForbidden, wire.CodeForbidden)
	if e.Details["field"] != "operator" {
		t.Errorf("details: got %v, want field operator", e.Details)
	}
	if d := f.issue(t, keyOperator, withOperator("alice@example.com")); d.Operator != "alice@example.com" {
		t.Errorf("own name: got operator %q, want alice@example.com", d.Operator)
	}
	d := f.issue(t, keyAdmin, withOperator("bob@example.com"))
	if d.Operator != "bob@example.com" {
		t.Errorf("admin for bob: got operator %q, want bob@example.com", d.Operator)
	}
	if ev := f.events(t, "?target="+d.ID); len(ev) != 1 || ev[0].Actor != "bob@example.com" {
		t.Errorf("provenance: got %+v, want actor bob@example.com", ev)
	}
	call(t, f.srv, http.MethodPost, "/v1/control/directives", keyViewer, bodyQuarantine).wantError(t, http.StatusForbidden, wire.CodeForbidden)
	call(t, f.srv, http.MethodDelete, "/v1/control/directives/"+d.ID, keyViewer, "").wantError(t, http.StatusForbidden, wire.CodeForbidden)
	call(t, f.srv, http.MethodGet, "/v1/control/directives", "", "").wantError(t, http.StatusUnauthorized, wire.CodeUnauthenticated)
}

func TestMalformedDirectives(t *testing.T) {
	f := newControlFixture(t, controlplane.DefaultConfig())
	tests := []struct {
		name, body, field string
	}{
		{"unknown type", `{"type":"banish","target":{"agent_ids":["support-bot"]}}`, "type"},
		{"missing type", `{"target":{"agent_ids":["support-bot"]}}`, "type"},
		{"no target", `{"type":"quarantine"}`, "target"},
		{"empty target", `{"type":"quarantine","target":{}}`, "target"},
		{"blank agent id", `{"type":"quarantine","target":{"agent_ids":[""]}}`, "target.agent_ids[0]"},
		{"unknown archetype", `{"type":"quarantine","target":{"archetype":"wizard"}}`, "target.archetype"},
		{"unknown drift status", `{"type":"quarantine","target":{"drift_status":"wobbly"}}`, "target.drift_status"},
		{"factor zero", `{"type":"tighten","target":{"team":"support"},"parameters":{"factor":0}}`, "parameters.factor"},
		{"factor negative", `{"type":"tighten","target":{"team":"support"},"parameters":{"factor":-0.5}}`, "parameters.factor"},
		{"factor string", `{"type":"tighten","target":{"team":"support"},"parameters":{"factor":"half"}}`, "parameters.factor"},
		{"factor missing", `{"type":"tighten","target":{"team":"support"}}`, "parameters.factor"},
		{"factor on a quarantine", `{"type":"quarantine","target":{"team":"support"},"parameters":{"factor":0.5}}`, "parameters.factor"},
		{"bad CEL", `{"type":"enforce","target":{"team":"support"},"parameters":{"invariants":[{"name":"x","expr":"action.type =="}]}}`, "parameters.invariants[0].expr"},
		{"no invariants", `{"type":"enforce","target":{"team":"support"},"parameters":{"invariants":[]}}`, "parameters.invariants"},
		{"unnamed invariant", `{"type":"enforce","target":{"team":"support"},"parameters":{"invariants":[{"expr":"true"}]}}`, "parameters.invariants[0].name"},
		{"no term", `{"type":"re_anchor","target":{"team":"support"},"parameters":{"term":" "}}`, "parameters.term"},
		{"no message", `{"type":"broadcast_reminder","target":{"team":"support"}}`, "parameters.message"},
		{"negative duration", `{"type":"quarantine","target":{"team":"support"},"duration_seconds":-5}`, "duration_seconds"},
		{"zero duration", `{"type":"quarantine","target":{"team":"support"},"duration_seconds":0}`, "duration_seconds"},
		{"huge duration", `{"type":"quarantine","target":{"team":"support"},"duration_seconds":1e12}`, "duration_seconds"},
		{"string duration", `{"type":"quarantine","target":{"team":"support"},"duration_seconds":"30m"}`, "duration_seconds"},
		{"release with a duration", `{"type":"release","target":{"team":"support"},"duration_seconds":60}`, "duration_seconds"},
		{"unknown field", `{"type":"quarantine","target":{"team":"support"},"colour":"red"}`, "colour"},
		{"unknown parameter", `{"type":"tighten","target":{"team":"support"},"parameters":{"fator":0.5}}`, "parameters.fator"},
		{"unknown target field", `{"type":"quarantine","target":{"teams":["support"]}}`, "target.teams"},
		{"agent_ids not a list", `{"type":"quarantine","target":{"agent_ids":"support-bot"}}`, "target.agent_ids"},
		{"malformed JSON", `{"type":`, ""},
		{"empty body", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := call(t, f.srv, http.MethodPost, "/v1/control/directives", keyOperator, tt.body).
				wantError(t, http.StatusBadRequest, wire.CodeInvalidRequest)
			got, _ := e.Details["field"].(string)
			if got != tt.field {
				t.Errorf("details.field: got %q, want %q (message %q)", got, tt.field, e.Message)
			}
		})
	}
	var list wire.DirectiveList
	call(t, f.srv, http.MethodGet, "/v1/control/directives", keyViewer, "").decode(t, &list)
	if len(list.Directives) != 0 {
		t.Errorf("after refused requests: got %d directives, want none", len(list.Directives))
	}
	if ev := f.events(t, ""); len(ev) != 0 {
		t.Errorf("after refused requests: got %d events, want none", len(ev))
	}
}

func TestProvenanceLimit(t *testing.T) {
	f := newControlFixture(t, controlplane.DefaultConfig())
	for _, q := range []string{"0", "-1", "ten", "", "1.5"} {
		e := call(t, f.srv, http.MethodGet, "/v1/provenance?limit="+q, keyViewer, "").wantError(t, http.StatusBadRequest, wire.CodeInvalidRequest)
		if e.Details["field"] != "limit" {
			t.Errorf("limit=%q: got details %v, want field limit", q, e.Details)
		}
	}
	for range 3 {
		f.issue(t, keyOperator, bodyQuarantine)
	}
	if got := f.events(t, "?limit=2"); len(got) != 2 {
		t.Errorf("limit=2: got %d events, want 2", len(got))
	}
	if got := f.events(t, "?limit=5000"); len(got) != 3 {
		t.Errorf("limit=5000: got %d events, want 3", len(got))
	}
}

func TestDurationExpiresThroughEvaluations(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	cfg := controlplane.Config{Enabled: true, ExpiryEvery: 1, ExpiryInterval: time.Hour}
	f := newControlFixture(t, cfg, controlplane.WithClock(clock.Now))
	d := f.issue(t, keyOperator, `{"type":"quarantine","target":{"agent_ids":["support-bot"]},"duration_seconds":60}`)
	if ev := f.decision(t, bodyRead); ev.Decision != "ESCALATE" {
		t.Fatalf("within the duration: got %s, want ESCALATE", ev.Decision)
	}
	clock.Advance(61 * time.Second)
	// The evaluation that notices the elapsed duration is decided first,
	// then counted: the next one is free.
	f.decision(t, bodyRead)
	if ev := f.decision(t, bodyRead); ev.Decision != "ALLOW" {
		t.Errorf("after the duration: got %s, want ALLOW", ev.Decision)
	}
	var got wire.Directive
	call(t, f.srv, http.MethodGet, "/v1/control/directives/"+d.ID, keyViewer, "").decode(t, &got)
	if got.Status != "expired" {
		t.Errorf("status: got %q, want expired", got.Status)
	}
	ev := f.events(t, "?context_code=CONTROL.DIRECTIVE_EXPIRED")
	if len(ev) != 1 || ev[0].Actor != "system" || ev[0].ActorType != "system" || ev[0].Target != d.ID {
		t.Errorf("provenance: got %+v, want one expiry by system", ev)
	}

	// DELETE checks expiry first: a directive that has just run out is
	// already expired.
	d2 := f.issue(t, keyOperator, `{"type":"quarantine","target":{"agent_ids":["support-bot"]},"duration_seconds":60}`)
	clock.Advance(61 * time.Second)
	call(t, f.srv, http.MethodDelete, "/v1/control/directives/"+d2.ID, keyOperator, "").wantError(t, http.StatusConflict, wire.CodeConflict)
}

func TestPlaygroundDoesNotCountTowardsExpiry(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	eng := newEngine(t, supportBot())
	plane, err := controlplane.New(controlplane.Config{Enabled: true, ExpiryEvery: 1, ExpiryInterval: time.Hour},
		eng, eng, controlplane.NewMemoryStore(), controlplane.WithClock(clock.Now))
	if err != nil {
		t.Fatalf("controlplane.New: %v", err)
	}
	srv := newServer(t, admin.Options{Governor: eng, Control: plane, Playground: true})
	res := call(t, srv, http.MethodPost, "/v1/control/directives", keyOperator,
		`{"type":"quarantine","target":{"agent_ids":["support-bot"]},"duration_seconds":1}`)
	if res.status != http.StatusCreated {
		t.Fatalf("issue: got %d (body %s)", res.status, res.body)
	}
	clock.Advance(2 * time.Second)
	for range 3 {
		call(t, srv, http.MethodPost, "/v1/playground/evaluate", keyOperator, bodyRead)
	}
	if ds, _ := plane.List(t.Context()); len(ds) != 1 {
		t.Errorf("after playground runs: got %d active directives, want 1 (dry runs do not drive expiry)", len(ds))
	}
}

func TestControlPlaneDisabled(t *testing.T) {
	eng := newEngine(t, supportBot())
	disabled, err := controlplane.New(controlplane.Config{}, eng, eng, controlplane.NewMemoryStore())
	if err != nil {
		t.Fatalf("controlplane.New: %v", err)
	}
	for name, plane := range map[string]*controlplane.Plane{"disabled plane": disabled, "no plane": nil} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, admin.Options{Governor: eng, Control: plane})
			res := call(t, srv, http.MethodPost, "/v1/control/directives", keyOperator, bodyQuarantine)
			res.wantError(t, http.StatusConflict, wire.CodeControlPlaneDisabled)
			var env map[string]json.RawMessage
			res.decode(t, &env)
			if string(env["success"]) != "false" {
				t.Errorf("success: got %s, want false (body %s)", env["success"], res.body)
			}
			del := call(t, srv, http.MethodDelete, "/v1/control/directives/dir_x", keyOperator, "")
			del.wantError(t, http.StatusConflict, wire.CodeControlPlaneDisabled)
			list := call(t, srv, http.MethodGet, "/v1/control/directives", keyViewer, "")
			if list.status != http.StatusOK || strings.TrimSpace(string(list.body)) != `{"directives":[]}` {
				t.Errorf("list: got %d %s, want 200 {\"directives\":[]}", list.status, list.body)
			}
			call(t, srv, http.MethodGet, "/v1/control/directives/dir_x", keyViewer, "").wantError(t, http.StatusNotFound, wire.CodeNotFound)
			prov := call(t, srv, http.MethodGet, "/v1/provenance", keyViewer, "")
			if prov.status != http.StatusOK || strings.TrimSpace(string(prov.body)) != `{"events":[]}` {
				t.Errorf("provenance: got %d %s, want 200 {\"events\":[]}", prov.status, prov.body)
			}
			if ev := evaluateOK(t, srv, bodyRead); ev.Decision != "ALLOW" {
				t.Errorf("evaluate: got %s, want ALLOW", ev.Decision)
			}
		})
	}
}

// TestOtherErrorsHaveNoSuccessMember: only control_plane_disabled carries
// "success".
func TestOtherErrorsHaveNoSuccessMember(t *testing.T) {
	f := newControlFixture(t, controlplane.DefaultConfig())
	res := call(t, f.srv, http.MethodPost, "/v1/control/directives", keyOperator, `{}`)
	if got := sortedKeys(t, res.body); !slices.Equal(got, []string{"error"}) {
		t.Errorf("400 envelope: got members %v, want [error]", got)
	}
}
