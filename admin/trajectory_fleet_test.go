package admin_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// fleetConfig is the trajectory config of the fleet view tests: fewer runs
// than the default, for speed under -race.
func fleetConfig() trajectory.Config {
	cfg := trajectory.DefaultConfig()
	cfg.Runs = 100
	return cfg
}

// viewFleetOf fetches the fleet view from srv and decodes it; raw holds
// its top-level JSON values.
func viewFleetOf(t *testing.T, srv *httptest.Server) (wire.Fleet, map[string]json.RawMessage) {
	t.Helper()
	var f wire.Fleet
	raw := getJSON(t, srv, "/v1/trajectory/fleet", &f)
	return f, raw
}

// untilCurrent polls the fleet view until every policy is current, for at
// most two minutes (the background refresh's time is not under test).
func untilCurrent(t *testing.T, srv *httptest.Server, n int) wire.Fleet {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		f, _ := viewFleetOf(t, srv)
		if f.PolicyStates != nil && f.PolicyStates.Current == n {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet view: got %+v after two minutes, want all %d current", f.PolicyStates, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantFleetOf checks f against Analyze of every agent of eng, on an
// analyzer of its own: its risk level, strategy and expected cost.
func wantFleetOf(t *testing.T, f wire.Fleet, eng *governor.Engine, cfg trajectory.Config, optimizer bool) {
	t.Helper()
	ref := trajectory.NewAnalyzer(cfg, optimizer)
	if len(f.Agents) != len(eng.Agents()) {
		t.Fatalf("agents: got %d, want %d", len(f.Agents), len(eng.Agents()))
	}
	for _, a := range f.Agents {
		st, err := eng.Status(a.AgentID)
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		h, _ := eng.DriftHistory(a.AgentID)
		want := ref.Analyze(a.AgentID, h, st.Thresholds, nil)
		if a.RiskLevel != string(want.Trajectory.Risk) {
			t.Errorf("%s: risk %s, want %s", a.AgentID, a.RiskLevel, want.Trajectory.Risk)
		}
		if want.Policy == nil {
			continue
		}
		if a.Strategy == nil || *a.Strategy != string(want.Policy.Strategy) || a.ExpectedCost == nil || *a.ExpectedCost != want.Policy.Expected.Total {
			t.Errorf("%s: strategy %v cost %v, want Analyze's %s at %v", a.AgentID, a.Strategy, a.ExpectedCost, want.Policy.Strategy, want.Policy.Expected.Total)
		}
	}
}

// TestTrajectoryFleetPolicyStates serves the fleet view without waiting
// (budget -1): the first answer is the cache as it is, labelled, and the
// background refresh, which outlives that request, makes every policy
// current, with the answers Analyze gives.
func TestTrajectoryFleetPolicyStates(t *testing.T) {
	const n = 24
	cfg := fleetConfig()
	cases := []struct {
		name      string
		optimizer bool
		warm      bool // the analyzer is settled on version 0, the agents then restored to version 1
		wantState string
		want      wire.FleetPolicyStates
	}{
		{"cold", true, false, "pending", wire.FleetPolicyStates{Pending: n}},
		{"drift changed since", true, true, "stale", wire.FleetPolicyStates{Stale: n}},
		{"optimizer off", false, false, "", wire.FleetPolicyStates{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eng := fleetEngine(t, n)
			a := trajectory.NewAnalyzer(cfg, tc.optimizer)
			old := map[string]*trajectory.Policy{}
			if tc.warm {
				for _, id := range eng.Agents() {
					st, _ := eng.Status(id)
					h, _ := eng.DriftHistory(id)
					old[id] = a.Analyze(id, h, st.Thresholds, nil).Policy
				}
				restoreFleet(t, eng, n, 1)
			}
			srv := newServer(t, admin.Options{Governor: eng, Trajectory: a, FleetBudget: -1})

			f, raw := viewFleetOf(t, srv)
			if f.Summary.Total != n || len(f.Agents) != n {
				t.Fatalf("got %d agents, summary %+v; want %d", len(f.Agents), f.Summary, n)
			}
			for _, ag := range f.Agents {
				if got := ag.PolicyState; (got == nil) != (tc.wantState == "") || (got != nil && *got != tc.wantState) {
					t.Errorf("%s: policy_state %v, want %q", ag.AgentID, got, tc.wantState)
				}
				switch p := old[ag.AgentID]; {
				case p != nil:
					if ag.Strategy == nil || *ag.Strategy != string(p.Strategy) || ag.ExpectedCost == nil || *ag.ExpectedCost != p.Expected.Total {
						t.Errorf("%s: strategy %v cost %v, want the stale policy's %s at %v", ag.AgentID, ag.Strategy, ag.ExpectedCost, p.Strategy, p.Expected.Total)
					}
				case ag.Strategy != nil || ag.ExpectedCost != nil:
					t.Errorf("%s: strategy %v cost %v, want null", ag.AgentID, ag.Strategy, ag.ExpectedCost)
				}
			}
			if !tc.optimizer {
				if string(raw["policy_states"]) != "null" {
					t.Errorf("policy_states: got %s, want null", raw["policy_states"])
				}
				wantFleetOf(t, f, eng, cfg, false)
				return
			}
			if f.PolicyStates == nil || *f.PolicyStates != tc.want {
				t.Errorf("policy_states: got %+v, want %+v", f.PolicyStates, tc.want)
			}
			// The per-agent route computes the current policy meanwhile.
			var tr wire.Trajectory
			getJSON(t, srv, "/v1/trajectory/agent-0005", &tr)
			st, _ := eng.Status("agent-0005")
			h, _ := eng.DriftHistory("agent-0005")
			if want := trajectory.NewAnalyzer(cfg, true).Analyze("agent-0005", h, st.Thresholds, nil).Policy; tr.Policy == nil || tr.Policy.Strategy != string(want.Strategy) || tr.Policy.ExpectedCost.Total != want.Expected.Total {
				t.Errorf("GET /v1/trajectory/agent-0005: policy %+v, want the current %s at %v", tr.Policy, want.Strategy, want.Expected.Total)
			}

			wantFleetOf(t, untilCurrent(t, srv, n), eng, cfg, true)
		})
	}
}

// TestTrajectoryFleetWaitsWithinItsBudget serves a cold fleet with a
// budget long enough for every policy: the first answer is all current.
func TestTrajectoryFleetWaitsWithinItsBudget(t *testing.T) {
	const n = 16
	cfg := fleetConfig()
	eng := fleetEngine(t, n)
	srv := newServer(t, admin.Options{Governor: eng, Trajectory: trajectory.NewAnalyzer(cfg, true), FleetBudget: time.Hour})
	f, _ := viewFleetOf(t, srv)
	if want := (wire.FleetPolicyStates{Current: n}); f.PolicyStates == nil || *f.PolicyStates != want {
		t.Fatalf("policy_states: got %+v, want %+v", f.PolicyStates, want)
	}
	wantFleetOf(t, f, eng, cfg, true)
}

// TestTrajectoryFleetConcurrentViews asks for a cold fleet view from
// several clients at once: with a budget that waits, every answer is the
// same, all current; without waiting every answer is labelled consistently
// (the refresh they share makes them current later).
func TestTrajectoryFleetConcurrentViews(t *testing.T) {
	const n, clients = 24, 6
	cfg := fleetConfig()
	cases := []struct {
		name   string
		budget time.Duration
	}{
		{"waiting", time.Hour},
		{"not waiting", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eng := fleetEngine(t, n)
			srv := newServer(t, admin.Options{Governor: eng, Trajectory: trajectory.NewAnalyzer(cfg, true), FleetBudget: tc.budget})
			bodies := make([][]byte, clients)
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					res := call(t, srv, http.MethodGet, "/v1/trajectory/fleet", keyViewer, "")
					if res.status != http.StatusOK {
						t.Errorf("client %d: got %d %s", i, res.status, res.body)
					}
					bodies[i] = res.body
				})
			}
			wg.Wait()
			for i, body := range bodies {
				var f wire.Fleet
				if err := json.Unmarshal(body, &f); err != nil || f.PolicyStates == nil {
					t.Fatalf("client %d: got %s (%v)", i, body, err)
				}
				if tc.budget > 0 && !bytes.Equal(body, bodies[0]) {
					t.Errorf("client %d: got another answer than client 0:\n%s\n%s", i, body, bodies[0])
				}
				for _, a := range f.Agents {
					pending := a.PolicyState != nil && *a.PolicyState == "pending"
					if a.PolicyState == nil || *a.PolicyState == "stale" || (a.Strategy == nil) != pending {
						t.Errorf("client %d, %s: state %v strategy %v; want current with a strategy or pending without", i, a.AgentID, a.PolicyState, a.Strategy)
					}
				}
				if tc.budget > 0 && f.PolicyStates.Current != n {
					t.Errorf("client %d: policy_states %+v, want all %d current", i, *f.PolicyStates, n)
				}
			}
			wantFleetOf(t, untilCurrent(t, srv, n), eng, cfg, true)
		})
	}
}
