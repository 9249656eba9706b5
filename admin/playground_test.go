package admin_test

import (
	"net/http"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
)

func TestPlayground(t *testing.T) {
	body := `{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/orders/42"}}`
	t.Run("disabled", func(t *testing.T) {
		srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot())})
		res := call(t, srv, http.MethodPost, "/v1/playground/evaluate", keyOperator, body)
		res.wantError(t, http.StatusNotFound, wire.CodeNotFound)
	})
	t.Run("enabled", func(t *testing.T) {
		eng := newEngine(t, supportBot())
		srv := newServer(t, admin.Options{Governor: eng, Playground: true})
		before, err := eng.Status("support-bot")
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		for range 3 {
			res := call(t, srv, http.MethodPost, "/v1/playground/evaluate", keyOperator, body)
			if res.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
			}
			var raw map[string]any
			res.decode(t, &raw)
			if v, ok := raw["ledger"]; !ok || v != nil {
				t.Errorf("ledger: got %v (present %v), want null", v, ok)
			}
			var ev wire.Evaluation
			res.decode(t, &ev)
			if ev.Decision != "ALLOW" {
				t.Errorf("decision: got %s, want ALLOW (reasoning %q)", ev.Decision, ev.Reasoning)
			}
		}
		after, err := eng.Status("support-bot")
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		if after.Observations != before.Observations {
			t.Errorf("observations: got %d, want %d (unchanged)", after.Observations, before.Observations)
		}
		if after.Trust != before.Trust {
			t.Errorf("trust: got %v, want %v (unchanged)", after.Trust, before.Trust)
		}
		if !after.LastEvaluation.Equal(before.LastEvaluation) {
			t.Errorf("last evaluation: got %v, want %v (unchanged)", after.LastEvaluation, before.LastEvaluation)
		}
	})
	t.Run("enabled validates like evaluate", func(t *testing.T) {
		srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()), Playground: true})
		res := call(t, srv, http.MethodPost, "/v1/playground/evaluate", keyOperator, `{"agent_id":"support-bot"}`)
		got := res.wantError(t, http.StatusBadRequest, wire.CodeInvalidRequest)
		if got.Details["field"] != "action" {
			t.Errorf("details.field: got %v, want action", got.Details["field"])
		}
	})
}
