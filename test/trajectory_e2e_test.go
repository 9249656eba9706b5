package test

import (
	"fmt"
	"net/http"
	"testing"
)

// trajectoryConfig has one agent that may read and delete; the optimizer
// checks every second and records planned interventions.
const trajectoryConfig = `
api_keys:
  - {key: "k-ops", principal: "alice@example.com", role: operator}
  - {key: "k-view", principal: "auditor@example.com", role: viewer}
optimizer:
  interventions: recommend
  check_interval_seconds: 1
agents:
  - id: shifty
    token: "t"
    scope: [read, delete]
`

// TestTrajectoryE2E: an agent whose behaviour shifts from reads to deletes
// shows rising drift, a risk level above low and a recommendation, which
// the optimizer records as a planned intervention; simulate returns
// horizon points in [0, 1] for every strategy and creates no directive.
func TestTrajectoryE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	s := startServe(t, trajectoryConfig)
	evaluate := func(typ string, i int) {
		body := fmt.Sprintf(`{"agent_id":"shifty","action":{"type":%q,"target":"db/%s/%d"}}`, typ, typ, i%7)
		if status, out := s.post(t, "/v1/evaluate", "k-ops", body); status != http.StatusOK {
			t.Fatalf("evaluate: got %d %v", status, out)
		}
	}
	for i := range 300 {
		evaluate("read", i)
	}
	for i := range 100 {
		evaluate("delete", i)
	}

	status, tr := s.get(t, "/v1/trajectory/shifty", "k-view")
	if status != http.StatusOK {
		t.Fatalf("trajectory: got %d %v", status, tr)
	}
	if tr["risk_level"] == "low" {
		t.Errorf("risk_level: got low, want above low (current %v, velocity %v)", tr["current"], tr["velocity"])
	}
	rec, _ := tr["recommendation"].(map[string]any)
	if rec["intervention"] == "none" || rec["source"] != "optimizer" {
		t.Errorf("recommendation: got %v, want an intervention from the optimizer", rec)
	}
	if tr["policy"] == nil {
		t.Errorf("policy: got null with the optimizer on")
	}
	status, hist := s.get(t, "/v1/trajectory/shifty/history", "k-view")
	drift, _ := hist["drift"].([]any)
	if status != http.StatusOK || len(drift) < 2 {
		t.Fatalf("history: got %d with %d drift points, want several", status, len(drift))
	}
	first := drift[0].(map[string]any)["overall"].(float64)
	last := drift[len(drift)-1].(map[string]any)["overall"].(float64)
	if last <= first {
		t.Errorf("overall drift: first %.3f, last %.3f, want rising", first, last)
	}
	eventually(t, "a planned intervention in the history", func() bool {
		_, hist := s.get(t, "/v1/trajectory/shifty/history", "k-view")
		iv, _ := hist["interventions"].([]any)
		return len(iv) == 1 && iv[0].(map[string]any)["applied"] == false
	})

	for _, strategy := range []string{"no_op", "early_advisory", "wait_and_throttle", "immediate_escalate", "graduated"} {
		status, sim := s.post(t, "/v1/trajectory/simulate", "k-ops", fmt.Sprintf(`{"agent_id":"shifty","strategy":%q,"horizon":30}`, strategy))
		curve, _ := sim["curve"].([]any)
		if status != http.StatusOK || len(curve) != 30 {
			t.Fatalf("simulate %s: got %d with %d points, want 30", strategy, status, len(curve))
		}
		for _, p := range curve {
			if d := p.(map[string]any)["drift"].(float64); d < 0 || d > 1 {
				t.Errorf("simulate %s: drift %v outside [0, 1]", strategy, d)
			}
		}
	}
	if _, ds := s.get(t, "/v1/control/directives", "k-view"); len(ds["directives"].([]any)) != 0 {
		t.Errorf("directives after simulate (recommend mode): got %v, want none", ds["directives"])
	}
	if status, fleet := s.get(t, "/v1/trajectory/fleet", "k-view"); status != http.StatusOK || fleet["summary"].(map[string]any)["total"] != float64(1) {
		t.Errorf("fleet: got %d %v", status, fleet)
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/trajectory/nobody", ""},
		{"/v1/trajectory/simulate", `{"agent_id":"shifty","strategy":"yolo","horizon":5}`},
		{"/v1/trajectory/simulate", `{"agent_id":"shifty","strategy":"no_op","horizon":1001}`},
		{"/v1/trajectory/simulate", `{"agent_id":"shifty","strategy":"no_op","horizon":2.5}`},
	} {
		var status int
		if tc.body == "" {
			status, _ = s.get(t, tc.path, "k-view")
		} else {
			status, _ = s.post(t, tc.path, "k-ops", tc.body)
		}
		want := http.StatusBadRequest
		if tc.body == "" {
			want = http.StatusNotFound
		}
		if status != want {
			t.Errorf("%s %s: got %d, want %d", tc.path, tc.body, status, want)
		}
	}
	s.stop(t)
}
