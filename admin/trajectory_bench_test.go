package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// fleetEngine returns a real engine with n agents ("agent-0000", ...), each
// restored from a snapshot with the 20-point drift history
// fleetPoints(i, 0).
func fleetEngine(tb testing.TB, n int) *governor.Engine {
	tb.Helper()
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		tb.Fatalf("governor.New: %v", err)
	}
	for i := range n {
		if err := eng.SetContract(governor.Contract{AgentID: fleetID(i), Scope: []string{"read"}}); err != nil {
			tb.Fatalf("SetContract: %v", err)
		}
	}
	restoreFleet(tb, eng, n, 0)
	return eng
}

// fleetID is the id of agent i of a fleetEngine.
func fleetID(i int) string { return fmt.Sprintf("agent-%04d", i) }

// restoreFleet restores each of the n agents of a fleetEngine from a
// snapshot of it with the drift history fleetPoints(i, version), as a
// sidecar restoring an agent saved by another does.
func restoreFleet(tb testing.TB, eng *governor.Engine, n, version int) {
	tb.Helper()
	for i := range n {
		snap, err := eng.Snapshot(fleetID(i))
		if err != nil {
			tb.Fatalf("Snapshot: %v", err)
		}
		var doc map[string]any
		raw, _ := json.Marshal(snap)
		if err := json.Unmarshal(raw, &doc); err != nil {
			tb.Fatalf("snapshot document: %v", err)
		}
		state := doc["state"].(map[string]any)
		state["drift_history"] = fleetPoints(i, version)
		state["observations"] = 20 + 10*19
		raw, _ = json.Marshal(doc)
		var restored governor.Snapshot
		if err := json.Unmarshal(raw, &restored); err != nil {
			tb.Fatalf("snapshot: %v", err)
		}
		if err := eng.Restore(&restored); err != nil {
			tb.Fatalf("Restore: %v", err)
		}
	}
}

// fleetPoints is agent i's drift history: 20 recomputations 10
// observations apart, rising, steady or falling with the agent, with a
// wobble. A later version moves every point by 0.01 per version towards
// the middle, so that every agent's drift differs from version 0's.
func fleetPoints(i, version int) []governor.DriftPoint {
	t0 := time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	slope := float64(i%9-3) * 0.0008
	base := 0.02 + float64(i%13)*0.02
	points := make([]governor.DriftPoint, 20)
	for k := range points {
		d := min(1, max(0, base+slope*float64(10*k)+0.005*float64((i+k)%5-2)))
		if d < 0.5 {
			d += 0.01 * float64(version)
		} else {
			d -= 0.01 * float64(version)
		}
		points[k] = governor.DriftPoint{Step: 20 + 10*k, Time: t0.Add(time.Duration(k) * time.Minute), Confidence: 0.5,
			Drift: governor.DriftScores{Action: d * 1.2, Target: d * 0.9, Temporal: d * 0.5, Outcome: d * 0.7, Semantic: d, Overall: d}}
	}
	return points
}

// fleetServer is an admin server over gov with the test keys.
func fleetServer(tb testing.TB, gov admin.Governor, a *trajectory.Analyzer, budget time.Duration) *admin.Server {
	tb.Helper()
	s, err := admin.New(admin.Options{Governor: gov, Keys: testKeys, Trajectory: a, FleetBudget: budget})
	if err != nil {
		tb.Fatalf("admin.New: %v", err)
	}
	return s
}

// viewFleet serves GET /v1/trajectory/fleet through s's handler (no
// network) and returns the body.
func viewFleet(tb testing.TB, s *admin.Server) []byte {
	tb.Helper()
	req := httptest.NewRequest(http.MethodGet, "/v1/trajectory/fleet", nil)
	req.Header.Set("X-Api-Key", keyViewer)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("fleet: got %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// currentPolicies returns how many agents of a fleet view are served
// current.
func currentPolicies(tb testing.TB, body []byte) int {
	tb.Helper()
	var f wire.Fleet
	if err := json.Unmarshal(body, &f); err != nil || f.PolicyStates == nil {
		tb.Fatalf("fleet: got %.200s (%v), want policy states", body, err)
	}
	return f.PolicyStates.Current
}

// settle makes every agent's policy in a current for gov: a fleet view
// that waits as long as it takes, which also outlasts the refresh of any
// other server sharing a (the refreshes share the analyzer's computations).
func settle(tb testing.TB, gov admin.Governor, a *trajectory.Analyzer, n int) {
	tb.Helper()
	if got := currentPolicies(tb, viewFleet(tb, fleetServer(tb, gov, a, time.Hour))); got != n {
		tb.Fatalf("settled: got %d current, want %d", got, n)
	}
}

// BenchmarkFleet1000 is GET /v1/trajectory/fleet over 1000 agents with
// 20-point drift histories, with the optimizer on and the default Config
// and fleet budget (100 ms), through the handler (no network):
//   - warm: every policy current (cached);
//   - stale: every agent's drift changed since its policy was computed
//     (the analyzer settled on the other of two sets of histories): the
//     view waits up to the budget for the background refresh;
//   - cold: a new analyzer, every agent pending at first;
//   - cold_until_current: a new analyzer and a budget that waits for
//     every policy: the time a full refresh takes from cold, which is how
//     long the view may show agents stale or pending;
//   - optimizer_off.
//
// stale and cold report current/op, the agents served current within the
// budget. Between their iterations, with the timer stopped, the background
// refresh is waited for (settle), so that it never runs into the next
// measured view.
func BenchmarkFleet1000(b *testing.B) {
	const n = 1000
	eng := fleetEngine(b, n)
	b.Run("warm", func(b *testing.B) {
		a := trajectory.NewAnalyzer(trajectory.DefaultConfig(), true)
		settle(b, eng, a, n)
		s := fleetServer(b, eng, a, 0)
		b.ReportAllocs()
		for b.Loop() {
			viewFleet(b, s)
		}
	})
	b.Run("stale", func(b *testing.B) {
		// Two engines of the same agents with different histories; the
		// analyzer is settled on the one not viewed next.
		engs := [2]*governor.Engine{eng, fleetEngine(b, n)}
		restoreFleet(b, engs[1], n, 1)
		a := trajectory.NewAnalyzer(trajectory.DefaultConfig(), true)
		settle(b, engs[1], a, n)
		current, i := 0, 0
		for b.Loop() {
			b.StopTimer()
			s := fleetServer(b, engs[i%2], a, 0)
			b.StartTimer()
			body := viewFleet(b, s)
			b.StopTimer()
			current += currentPolicies(b, body)
			settle(b, engs[i%2], a, n)
			i++
			b.StartTimer()
		}
		b.ReportMetric(float64(current)/float64(i), "current/op")
	})
	b.Run("cold", func(b *testing.B) {
		current, i := 0, 0
		for b.Loop() {
			b.StopTimer()
			a := trajectory.NewAnalyzer(trajectory.DefaultConfig(), true)
			s := fleetServer(b, eng, a, 0)
			b.StartTimer()
			body := viewFleet(b, s)
			b.StopTimer()
			current += currentPolicies(b, body)
			settle(b, eng, a, n)
			i++
			b.StartTimer()
		}
		b.ReportMetric(float64(current)/float64(i), "current/op")
	})
	b.Run("cold_until_current", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			s := fleetServer(b, eng, trajectory.NewAnalyzer(trajectory.DefaultConfig(), true), time.Hour)
			b.StartTimer()
			body := viewFleet(b, s)
			b.StopTimer()
			if got := currentPolicies(b, body); got != n {
				b.Fatalf("current: got %d, want %d", got, n)
			}
			b.StartTimer()
		}
	})
	b.Run("optimizer_off", func(b *testing.B) {
		s := fleetServer(b, eng, trajectory.NewAnalyzer(trajectory.DefaultConfig(), false), 0)
		b.ReportAllocs()
		for b.Loop() {
			viewFleet(b, s)
		}
	})
}
