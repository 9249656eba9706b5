package trajectory

import (
	"math"
	"testing"

	"github.com/vigilhq/vigil/governor"
)

// binary are thresholds exactly representable in binary, so that the
// hand-checked paths hit them exactly.
var binary = governor.Thresholds{Low: 0.125, Moderate: 0.25, High: 0.5, Critical: 0.75}

// defaults are governor's default drift thresholds.
var defaults = governor.Thresholds{Low: 0.10, Moderate: 0.20, High: 0.40, Critical: 0.60}

// overall builds a trajectory from an overall drift, velocity and sigma.
func overall(d, v, sigma float64, thr governor.Thresholds) Trajectory {
	return Trajectory{
		Current:    governor.DriftScores{Overall: d},
		Velocity:   governor.DriftScores{Overall: v},
		Sigma:      sigma,
		Thresholds: thr,
	}
}

// exact is a config whose runs are all identical when the trajectory's sigma
// is 0.
func exact(runs int) Config {
	c := DefaultConfig()
	c.MinSigma = 0
	c.Runs = runs
	return c
}

// history builds drift points with only the overall drift set.
func history(steps []int, drift []float64) []governor.DriftPoint {
	h := make([]governor.DriftPoint, len(steps))
	for i := range steps {
		h[i] = governor.DriftPoint{Step: steps[i], Drift: governor.DriftScores{Overall: drift[i]}}
	}
	return h
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

func assertNear(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}
