package trajectory

import (
	"testing"

	"github.com/vigilhq/vigil/governor"
)

// benchHistory is a full drift history (1000 points, the governor's
// default DriftHistoryKept) of a slowly drifting agent.
func benchHistory() []governor.DriftPoint {
	h := make([]governor.DriftPoint, 1000)
	for i := range h {
		x := float64(i) / 1000
		wobble := 0.01 * float64(i%7-3)
		d := 0.05 + 0.3*x + wobble
		h[i] = governor.DriftPoint{Step: 20 + 10*i, Drift: governor.DriftScores{
			Action: d, Target: d * 0.8, Temporal: d * 0.5, Outcome: d * 0.3, Semantic: d * 1.1, Overall: d,
		}}
	}
	return h
}

// BenchmarkOptimize is the optimizer with the defaults: 5 strategies × 1000
// runs × horizon 50.
func BenchmarkOptimize(b *testing.B) {
	cfg := DefaultConfig()
	tr := Project(benchHistory(), defaults, nil, cfg)
	b.ReportAllocs()
	for b.Loop() {
		Optimize(tr, cfg.Horizon, cfg)
	}
}

// BenchmarkProject projects a full 1000-point history 50 observations ahead.
func BenchmarkProject(b *testing.B) {
	cfg := DefaultConfig()
	h := benchHistory()
	past := []Past{{Step: 500, Type: Advisory}, {Step: 900, Type: Throttle}}
	b.ReportAllocs()
	for b.Loop() {
		Project(h, defaults, past, cfg)
	}
}

// BenchmarkSimulate is one strategy, 1000 runs, horizon 1000 (the API's
// largest horizon).
func BenchmarkSimulate(b *testing.B) {
	cfg := DefaultConfig()
	tr := Project(benchHistory(), defaults, nil, cfg)
	b.ReportAllocs()
	for b.Loop() {
		Simulate(tr, Graduated, 1000, cfg)
	}
}
