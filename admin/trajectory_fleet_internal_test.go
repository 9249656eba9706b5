package admin

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// gatedGovernor is a Governor whose DriftHistory waits until gate is closed
// (nil: it does not wait), then panics for the agents of panics and fails
// for those of fails.
type gatedGovernor struct {
	Governor
	gate   chan struct{}
	panics map[string]bool
	fails  map[string]error
	calls  *atomic.Int64 // nil: not counted
}

func (g gatedGovernor) DriftHistory(id string) ([]governor.DriftPoint, error) {
	if g.calls != nil {
		g.calls.Add(1)
	}
	if g.gate != nil {
		<-g.gate
	}
	if g.panics[id] {
		panic("secret-detail: drift history of " + id + " exploded")
	}
	if err := g.fails[id]; err != nil {
		return nil, err
	}
	return g.Governor.DriftHistory(id)
}

// refreshFixture is a server over a real engine with agents a1, a2 and a3
// (seen through gov), the optimizer on with few runs, and its log.
func refreshFixture(t *testing.T, gov func(Governor) Governor) (*Server, *bytes.Buffer) {
	t.Helper()
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	for _, id := range []string{"a1", "a2", "a3"} {
		if err := eng.SetContract(governor.Contract{AgentID: id, Scope: []string{"read"}}); err != nil {
			t.Fatalf("SetContract: %v", err)
		}
	}
	cfg := trajectory.DefaultConfig()
	cfg.Runs = 20
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return newTestServer(t, Options{Governor: gov(eng), Trajectory: trajectory.NewAnalyzer(cfg, true), Logger: log}), &logs
}

// policyStates returns the policy state of each agent as s's analyzer holds it.
func policyStates(t *testing.T, s *Server, ids ...string) []trajectory.PolicyState {
	t.Helper()
	out := make([]trajectory.PolicyState, len(ids))
	for i, id := range ids {
		thr, h, err := s.driftOf(id)
		if err != nil {
			t.Fatalf("driftOf(%s): %v", id, err)
		}
		a, _ := s.analyzer.Cached(id, h, thr, nil)
		out[i] = a.PolicyState
	}
	return out
}

// TestFleetRefreshRunsOnce starts a refresh, blocked in the governor, and
// asks for another while it runs: none starts. The first outlives its
// request's context and makes the policies current.
func TestFleetRefreshRunsOnce(t *testing.T) {
	gate := make(chan struct{})
	s, logs := refreshFixture(t, func(g Governor) Governor { return gatedGovernor{Governor: g, gate: gate} })
	ctx, cancel := context.WithCancel(context.Background())
	first := s.refreshPolicies(ctx, []string{"a1", "a2"})
	cancel() // the request ended
	if again := s.refreshPolicies(context.Background(), []string{"a3"}); again != first {
		t.Errorf("a second refresh started while the first runs")
	}
	close(gate)
	<-first
	if got := policyStates(t, s, "a1", "a2", "a3"); got[0] != trajectory.PolicyCurrent || got[1] != trajectory.PolicyCurrent || got[2] != trajectory.PolicyPending {
		t.Errorf("after the refresh: got %v, want a1 and a2 current, a3 pending (not in it)", got)
	}
	next := s.refreshPolicies(context.Background(), []string{"a3"})
	if next == first {
		t.Fatalf("after the first ended: got its channel again, want a new refresh")
	}
	<-next
	if got := policyStates(t, s, "a3"); got[0] != trajectory.PolicyCurrent {
		t.Errorf("a3 after the second refresh: got %s, want current", got[0])
	}
	if n := strings.Count(logs.String(), "fleet view's policies refreshed"); n != 2 {
		t.Errorf("log: got %d refreshes, want 2:\n%s", n, logs)
	}
}

// TestFleetRefreshStopsAtClose closes the server while a refresh of many
// agents is blocked in the governor: Close waits for the agents being
// analyzed, the rest are not, and no refresh starts after.
func TestFleetRefreshStopsAtClose(t *testing.T) {
	gate := make(chan struct{})
	var calls atomic.Int64
	s, logs := refreshFixture(t, func(g Governor) Governor { return gatedGovernor{Governor: g, gate: gate, calls: &calls} })
	var ids []string
	for range 40 {
		ids = append(ids, "a1", "a2", "a3")
	}
	workers := int64(min(runtime.GOMAXPROCS(0), len(ids)))
	running := s.refreshPolicies(context.Background(), ids)
	for deadline := time.Now().Add(10 * time.Second); calls.Load() < workers; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workers reached the governor in 10s", calls.Load(), workers)
		}
	}
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while the refresh was analyzing agents")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	<-closed
	select {
	case <-running:
	default:
		t.Fatal("Close returned before the refresh ended")
	}
	if n := calls.Load(); n != workers {
		t.Errorf("the refresh read %d agents' drift; want only the %d in flight at Close", n, workers)
	}
	if !strings.Contains(logs.String(), `"complete":false`) {
		t.Errorf("log: got %s, want the refresh logged as incomplete", logs)
	}
	after := s.refreshPolicies(context.Background(), ids)
	select {
	case <-after:
	default:
		t.Fatal("a refresh asked for after Close: got a channel still open, want one already closed")
	}
	if n := calls.Load(); n != workers {
		t.Errorf("after Close: %d drift reads, want no new refresh", n)
	}
	s.Close() // again: nothing to wait for
}

// TestFleetRefreshFailures refreshes agents whose drift cannot be read: a
// panic is logged and ends the refresh, an error is logged and skipped,
// and either way the refresh ends and a later one can start.
func TestFleetRefreshFailures(t *testing.T) {
	cases := []struct {
		name    string
		panics  map[string]bool
		fails   map[string]error
		wantLog string
	}{
		{"panic", map[string]bool{"a2": true}, nil, "recovered panic in the fleet view's policy refresh"},
		{"error", nil, map[string]error{"a2": errors.New("secret-detail: lost")}, "policy refresh skipped an agent"},
		{"removed agent", nil, map[string]error{"a2": governor.ErrUnknownAgent}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, logs := refreshFixture(t, func(g Governor) Governor { return gatedGovernor{Governor: g, panics: tc.panics, fails: tc.fails} })
			done := s.refreshPolicies(context.Background(), []string{"a1", "a2", "a3"})
			<-done
			out := logs.String()
			if tc.wantLog != "" && (!strings.Contains(out, tc.wantLog) || !strings.Contains(out, "secret-detail") || !strings.Contains(out, `"agent_id":"a2"`)) {
				t.Errorf("log: got %s, want %q about a2 with its cause", out, tc.wantLog)
			}
			if tc.wantLog == "" && strings.Contains(out, `"level":"WARN"`) {
				t.Errorf("log: got %s, want no warning for a removed agent", out)
			}
			if tc.panics == nil {
				if got := policyStates(t, s, "a1", "a3"); got[0] != trajectory.PolicyCurrent || got[1] != trajectory.PolicyCurrent {
					t.Errorf("the other agents: got %v, want them current", got)
				}
			}
			next := s.refreshPolicies(context.Background(), []string{"a1"})
			if next == done {
				t.Errorf("after a failed refresh: got its channel again, want a new refresh")
			}
			<-next
		})
	}
}
