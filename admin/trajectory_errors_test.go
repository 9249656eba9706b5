package admin_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// DriftHistory completes brokenGovernor (recovery_test.go) as an
// admin.Governor.
func (g brokenGovernor) DriftHistory(string) ([]governor.DriftPoint, error) {
	return nil, g.fail("DriftHistory")
}

func TestTrajectoryErrors(t *testing.T) {
	f := newTrajectoryFixture(t)
	sim := func(fields string) string { return "{" + fields + "}" }
	cases := []struct {
		name      string
		method    string
		path      string
		key       string
		body      string
		status    int
		code      string
		wantField string
	}{
		{"unknown agent", http.MethodGet, "/v1/trajectory/nobody", keyViewer, "", 404, wire.CodeNotFound, ""},
		{"unknown agent's history", http.MethodGet, "/v1/trajectory/nobody/history", keyViewer, "", 404, wire.CodeNotFound, ""},
		{"simulate an unknown agent", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "nobody", "strategy": "graduated", "horizon": 10`), 404, wire.CodeNotFound, ""},
		{"GET simulate names an agent", http.MethodGet, "/v1/trajectory/simulate", keyViewer, "", 404, wire.CodeNotFound, ""},
		{"POST to the fleet", http.MethodPost, "/v1/trajectory/fleet", keyOperator, "{}", 405, wire.CodeMethodNotAllowed, ""},
		{"unknown strategy", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "aggressive", "horizon": 10`), 400, wire.CodeInvalidRequest, "strategy"},
		{"strategy in upper case", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "GRADUATED", "horizon": 10`), 400, wire.CodeInvalidRequest, "strategy"},
		{"strategy missing", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "horizon": 10`), 400, wire.CodeInvalidRequest, "strategy"},
		{"strategy a number", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": 3, "horizon": 10`), 400, wire.CodeInvalidRequest, "strategy"},
		{"horizon 0", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": 0`), 400, wire.CodeInvalidRequest, "horizon"},
		{"horizon 1001", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": 1001`), 400, wire.CodeInvalidRequest, "horizon"},
		{"horizon negative", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": -5`), 400, wire.CodeInvalidRequest, "horizon"},
		{"horizon 2.5", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": 2.5`), 400, wire.CodeInvalidRequest, "horizon"},
		{"horizon a string", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": "10"`), 400, wire.CodeInvalidRequest, "horizon"},
		{"horizon missing", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op"`), 400, wire.CodeInvalidRequest, "horizon"},
		{"horizon null", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": null`), 400, wire.CodeInvalidRequest, "horizon"},
		{"horizon too large for an int", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": 1e30`), 400, wire.CodeInvalidRequest, "horizon"},
		{"agent_id missing", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"strategy": "no_op", "horizon": 10`), 400, wire.CodeInvalidRequest, "agent_id"},
		{"unknown field", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": 10, "apply": true`), 400, wire.CodeInvalidRequest, "apply"},
		{"malformed JSON", http.MethodPost, "/v1/trajectory/simulate", keyOperator,
			`{"agent_id": "drifter", "strategy": "no_op", "horizon": 10`, 400, wire.CodeInvalidRequest, ""},
		{"not an object", http.MethodPost, "/v1/trajectory/simulate", keyOperator, `["drifter"]`, 400, wire.CodeInvalidRequest, ""},
		{"empty body", http.MethodPost, "/v1/trajectory/simulate", keyOperator, "", 400, wire.CodeInvalidRequest, ""},
		{"viewer may not simulate", http.MethodPost, "/v1/trajectory/simulate", keyViewer,
			sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": 10`), 403, wire.CodeForbidden, ""},
		{"no key", http.MethodGet, "/v1/trajectory/drifter", "", "", 401, wire.CodeUnauthenticated, ""},
		{"no key for the fleet", http.MethodGet, "/v1/trajectory/fleet", "", "", 401, wire.CodeUnauthenticated, ""},
		{"unknown key", http.MethodGet, "/v1/trajectory/drifter/history", "k-nope", "", 401, wire.CodeUnauthenticated, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, f.opt, tc.method, tc.path, tc.key, tc.body)
			e := res.wantError(t, tc.status, tc.code)
			if got, _ := e.Details["field"].(string); got != tc.wantField {
				t.Errorf("details.field: got %q, want %q (message %q)", got, tc.wantField, e.Message)
			}
		})
	}

	t.Run("the error names the strategies", func(t *testing.T) {
		res := call(t, f.srv, http.MethodPost, "/v1/trajectory/simulate", keyOperator, sim(`"agent_id": "drifter", "strategy": "aggressive", "horizon": 10`))
		e := res.wantError(t, 400, wire.CodeInvalidRequest)
		for _, s := range trajectory.Strategies() {
			if !strings.Contains(e.Message, string(s)) {
				t.Errorf("message %q: want it to name %s", e.Message, s)
			}
		}
	})

	t.Run("every role may read", func(t *testing.T) {
		for _, key := range []string{keyViewer, keyOperator, keyAdmin} {
			for _, path := range []string{"/v1/trajectory/drifter", "/v1/trajectory/drifter/history", "/v1/trajectory/fleet"} {
				if res := call(t, f.srv, http.MethodGet, path, key, ""); res.status != http.StatusOK {
					t.Errorf("GET %s as %s: got %d, want 200", path, key, res.status)
				}
			}
		}
		if res := call(t, f.srv, http.MethodPost, "/v1/trajectory/simulate", keyAdmin, sim(`"agent_id": "drifter", "strategy": "no_op", "horizon": 1`)); res.status != http.StatusOK {
			t.Errorf("simulate as admin: got %d %s, want 200", res.status, res.body)
		}
	})
}

func TestTrajectoryInterventionLogFailure(t *testing.T) {
	eng := newEngine(t, drifter())
	var logs bytes.Buffer
	srv := newServer(t, admin.Options{Governor: eng, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Interventions: interventionLog{err: errors.New("secret-detail: store down")}})
	for _, path := range []string{"/v1/trajectory/drifter", "/v1/trajectory/drifter/history"} {
		res := call(t, srv, http.MethodGet, path, keyViewer, "")
		res.wantError(t, http.StatusServiceUnavailable, wire.CodeUnavailable)
		if strings.Contains(string(res.body), "secret-detail") {
			t.Errorf("GET %s: got %s, want the cause kept out of the answer", path, res.body)
		}
	}
	if !strings.Contains(logs.String(), "secret-detail") {
		t.Errorf("log: got %s, want the cause", logs.String())
	}
	// The fleet and the simulation do not read the log.
	if res := call(t, srv, http.MethodGet, "/v1/trajectory/fleet", keyViewer, ""); res.status != http.StatusOK {
		t.Errorf("fleet: got %d %s, want 200", res.status, res.body)
	}
	if res := call(t, srv, http.MethodGet, "/v1/trajectory/nobody", keyViewer, ""); res.status != http.StatusNotFound {
		t.Errorf("unknown agent: got %d, want 404 before the log is asked", res.status)
	}
}

// listingGovernor lists its agents but fails like brokenGovernor otherwise:
// the fleet route reaches its workers.
type listingGovernor struct{ brokenGovernor }

func (listingGovernor) Agents() []string { return []string{"a1", "a2", "a3"} }

func TestTrajectoryFailuresAreInternal(t *testing.T) {
	cases := []struct {
		name string
		gov  admin.Governor
		path string
	}{
		{"status fails", brokenGovernor{err: errors.New("secret-detail: lost")}, "/v1/trajectory/a1"},
		{"history status fails", brokenGovernor{err: errors.New("secret-detail: lost")}, "/v1/trajectory/a1/history"},
		{"fleet status fails", listingGovernor{brokenGovernor{err: errors.New("secret-detail: lost")}}, "/v1/trajectory/fleet"},
		{"fleet worker panics", listingGovernor{brokenGovernor{panics: true}}, "/v1/trajectory/fleet"},
		{"listing the fleet panics", brokenGovernor{panics: true}, "/v1/trajectory/fleet"},
		{"trajectory panics", brokenGovernor{panics: true}, "/v1/trajectory/a1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			srv := newServer(t, admin.Options{Governor: tc.gov, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			res := call(t, srv, http.MethodGet, tc.path, keyViewer, "")
			res.wantError(t, http.StatusInternalServerError, wire.CodeInternal)
			for _, leak := range []string{"secret-detail", "goroutine", ".go:"} {
				if strings.Contains(string(res.body), leak) {
					t.Errorf("body: got %s, want no %q in it", res.body, leak)
				}
			}
			if !strings.Contains(logs.String(), "secret-detail") {
				t.Errorf("log: got %s, want the cause", logs.String())
			}
		})
	}
}
