package admin_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// brokenGovernor fails in the ways a real engine must not: it panics, or
// returns errs[method].
type brokenGovernor struct {
	panics bool
	err    error
}

func (g brokenGovernor) fail(method string) error {
	if g.panics {
		panic(fmt.Sprintf("secret-detail: %s exploded", method))
	}
	return g.err
}

func (g brokenGovernor) Evaluate(governor.Request) (*governor.Decision, error) {
	return nil, g.fail("Evaluate")
}

func (g brokenGovernor) Agents() []string {
	_ = g.fail("Agents")
	return []string{"a1"}
}

func (g brokenGovernor) Status(string) (governor.AgentStatus, error) {
	return governor.AgentStatus{}, g.fail("Status")
}

func (g brokenGovernor) SetContract(governor.Contract) error { return g.fail("SetContract") }

func TestFailuresAreInternal(t *testing.T) {
	evalBody := `{"agent_id":"a1","action":{"type":"read"}}`
	tests := []struct {
		name    string
		gov     brokenGovernor
		method  string
		path    string
		key     string
		body    string
		wantLog string
	}{
		{"panic listing agents", brokenGovernor{panics: true}, http.MethodGet, "/v1/agents", keyViewer, "", "recovered panic"},
		{"panic evaluating", brokenGovernor{panics: true}, http.MethodPost, "/v1/evaluate", keyOperator, evalBody, "recovered panic"},
		{"panic setting a contract", brokenGovernor{panics: true}, http.MethodPut, "/v1/agents/a1", keyAdmin, `{}`, "recovered panic"},
		{"undecidable", brokenGovernor{err: fmt.Errorf("%w: secret-detail", governor.ErrUndecidable)},
			http.MethodPost, "/v1/evaluate", keyOperator, evalBody, "internal error"},
		{"other evaluate error", brokenGovernor{err: errors.New("secret-detail: disk on fire")},
			http.MethodPost, "/v1/evaluate", keyOperator, evalBody, "internal error"},
		{"status error", brokenGovernor{err: errors.New("secret-detail: lost")},
			http.MethodGet, "/v1/agents/a1", keyViewer, "", "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			srv := newServer(t, admin.Options{Governor: tt.gov, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			res := call(t, srv, tt.method, tt.path, tt.key, tt.body)
			res.wantError(t, http.StatusInternalServerError, wire.CodeInternal)
			for _, leak := range []string{"secret-detail", "goroutine", "panic", ".go:"} {
				if strings.Contains(string(res.body), leak) {
					t.Errorf("body: got %s, want no %q in it", res.body, leak)
				}
			}
			if !strings.Contains(logs.String(), tt.wantLog) || !strings.Contains(logs.String(), "secret-detail") {
				t.Errorf("log: got %s, want %q with the cause", logs.String(), tt.wantLog)
			}
			if strings.Contains(logs.String(), keyViewer) || strings.Contains(logs.String(), keyOperator) || strings.Contains(logs.String(), keyAdmin) {
				t.Errorf("log: got %s, want no key values in it", logs.String())
			}
		})
	}
}
