package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// fleetEngine returns a real engine with n agents ("agent-0000", ...), each
// restored from a snapshot with a 20-point drift history: recomputed every
// 10 observations, rising, steady or falling with the agent, with a wobble.
func fleetEngine(tb testing.TB, n int) *governor.Engine {
	tb.Helper()
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		tb.Fatalf("governor.New: %v", err)
	}
	t0 := time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("agent-%04d", i)
		if err := eng.SetContract(governor.Contract{AgentID: id, Scope: []string{"read"}}); err != nil {
			tb.Fatalf("SetContract: %v", err)
		}
		snap, err := eng.Snapshot(id)
		if err != nil {
			tb.Fatalf("Snapshot: %v", err)
		}
		var doc map[string]any
		raw, _ := json.Marshal(snap)
		if err := json.Unmarshal(raw, &doc); err != nil {
			tb.Fatalf("snapshot document: %v", err)
		}
		slope := float64(i%9-3) * 0.0008
		base := 0.02 + float64(i%13)*0.02
		points := make([]governor.DriftPoint, 20)
		for k := range points {
			d := min(1, max(0, base+slope*float64(10*k)+0.005*float64((i+k)%5-2)))
			points[k] = governor.DriftPoint{Step: 20 + 10*k, Time: t0.Add(time.Duration(k) * time.Minute), Confidence: 0.5,
				Drift: governor.DriftScores{Action: d * 1.2, Target: d * 0.9, Temporal: d * 0.5, Outcome: d * 0.7, Semantic: d, Overall: d}}
		}
		state := doc["state"].(map[string]any)
		state["drift_history"] = points
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
	return eng
}

// BenchmarkFleet1000 is GET /v1/trajectory/fleet over 1000 agents with
// 20-point drift histories, with the optimizer on and the default Config,
// through the handler (no network): cold (a new Analyzer each time: 1000
// optimizations on runtime.GOMAXPROCS goroutines), warm (every policy
// cached) and with the optimizer off.
func BenchmarkFleet1000(b *testing.B) {
	eng := fleetEngine(b, 1000)
	serve := func(b *testing.B, s *admin.Server) {
		req := httptest.NewRequest(http.MethodGet, "/v1/trajectory/fleet", nil)
		req.Header.Set("X-Api-Key", keyViewer)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("fleet: got %d %s", rec.Code, rec.Body)
		}
	}
	server := func(b *testing.B, optimizer bool) *admin.Server {
		s, err := admin.New(admin.Options{Governor: eng, Keys: testKeys, Trajectory: trajectory.NewAnalyzer(trajectory.DefaultConfig(), optimizer)})
		if err != nil {
			b.Fatalf("admin.New: %v", err)
		}
		return s
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			serve(b, server(b, true))
		}
	})
	b.Run("warm", func(b *testing.B) {
		s := server(b, true)
		serve(b, s)
		b.ReportAllocs()
		for b.Loop() {
			serve(b, s)
		}
	})
	b.Run("optimizer off", func(b *testing.B) {
		s := server(b, false)
		b.ReportAllocs()
		for b.Loop() {
			serve(b, s)
		}
	})
}
