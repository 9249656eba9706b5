package trajectory

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/vigilhq/vigil/governor"
)

// Point is one drift observation or projection; Step is an observation count.
type Point struct {
	Step  int
	Drift governor.DriftScores
}

// Marker is an intervention on the trajectory's chart: planned (where the
// projection first crosses a threshold) or past (Planned false). Step is an
// observation count, on the same axis as Point.Step.
type Marker struct {
	Step    int
	Type    Intervention
	Planned bool
}

// Past is an intervention that happened (from directives or the optimizer),
// for markers and history. Step is the agent's observation count at the time.
type Past struct {
	Step    int
	Type    Intervention
	Reason  string
	Applied bool
	Time    time.Time
}

// Trajectory is an agent's drift: what was observed, where it is heading and
// how risky that is. Project computes it; it is a value and is never changed
// afterwards.
type Trajectory struct {
	// Current is the latest observed drift (zero without history).
	Current governor.DriftScores
	// Velocity is the least-squares slope per observation over the last
	// Window points, for each distribution and overall.
	Velocity governor.DriftScores
	// Sigma is the residual standard deviation of the overall fit, at least
	// Config.MinSigma.
	Sigma float64
	// Observed is the drift history, oldest first.
	Observed []Point
	// Projected holds Horizon points: Current + Velocity × h for h = 1..Horizon,
	// each field clamped to [0, 1], at Step = last observed step + h.
	Projected []Point
	// Thresholds are the agent's effective drift thresholds (after tighten).
	Thresholds governor.Thresholds
	// Risk is the level of the overall drift projected Lookahead observations
	// ahead.
	Risk RiskLevel
	// Markers are the past interventions (Planned false) and, planned, where
	// the overall projection first crosses the moderate (advisory), high
	// (throttle) and critical (escalate) thresholds; ordered by step, past
	// before planned at the same step.
	Markers []Marker
}

// Project computes the trajectory from the drift history (oldest first, as
// governor.Engine.DriftHistory returns it), the agent's effective thresholds
// and its past interventions. The history may be empty (zero drift, zero
// velocity) or short: with fewer than Window points the fit uses them all,
// and one point gives zero velocity.
func Project(history []governor.DriftPoint, thr governor.Thresholds, past []Past, cfg Config) Trajectory {
	cfg = cfg.normalized()
	t := Trajectory{
		Observed:   make([]Point, len(history)),
		Projected:  make([]Point, cfg.Horizon),
		Thresholds: thr,
	}
	last := 0
	for i, p := range history {
		t.Observed[i] = Point{Step: p.Step, Drift: p.Drift}
	}
	if n := len(history); n > 0 {
		t.Current, last = history[n-1].Drift, history[n-1].Step
	}
	var sigma float64
	t.Velocity, sigma = fit(history[max(0, len(history)-cfg.Window):])
	t.Sigma = max(sigma, cfg.MinSigma)

	cur, vel := fields(t.Current), fields(t.Velocity)
	for h := 1; h <= cfg.Horizon; h++ {
		t.Projected[h-1] = Point{Step: last + h, Drift: ahead(cur, vel, h)}
	}
	t.Risk = risk(clamp01(t.Current.Overall+t.Velocity.Overall*float64(cfg.Lookahead)), thr)
	t.Markers = markers(t.Current.Overall, t.Projected, thr, past)
	return t
}

// risk places a projected overall drift against the thresholds.
func risk(d float64, thr governor.Thresholds) RiskLevel {
	switch {
	case d < thr.Moderate:
		return RiskLow
	case d < thr.High:
		return RiskModerate
	case d < thr.Critical:
		return RiskHigh
	}
	return RiskCritical
}

// markers returns the past markers and the planned crossings, ordered by
// step. A threshold is crossed where the projection first reaches it from
// below; a threshold the current drift already reaches is not crossed.
func markers(current float64, projected []Point, thr governor.Thresholds, past []Past) []Marker {
	out := make([]Marker, 0, len(past)+3)
	for _, p := range past {
		if severity(p.Type) > 0 {
			out = append(out, Marker{Step: p.Step, Type: p.Type})
		}
	}
	for _, c := range []struct {
		at float64
		iv Intervention
	}{{thr.Moderate, Advisory}, {thr.High, Throttle}, {thr.Critical, Escalate}} {
		if current >= c.at {
			continue
		}
		for _, p := range projected {
			if p.Drift.Overall >= c.at {
				out = append(out, Marker{Step: p.Step, Type: c.iv, Planned: true})
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Marker) int { return cmp.Compare(a.Step, b.Step) })
	return out
}

// numFields is the number of drift fields: five distributions and overall.
const numFields = 6

// fields returns d's fields in the order action, target, temporal, outcome,
// semantic, overall.
func fields(d governor.DriftScores) [numFields]float64 {
	return [numFields]float64{d.Action, d.Target, d.Temporal, d.Outcome, d.Semantic, d.Overall}
}

// scores is the inverse of fields.
func scores(f [numFields]float64) governor.DriftScores {
	return governor.DriftScores{Action: f[0], Target: f[1], Temporal: f[2], Outcome: f[3], Semantic: f[4], Overall: f[5]}
}

// ahead projects h observations ahead, each field clamped to [0, 1].
func ahead(cur, vel [numFields]float64, h int) governor.DriftScores {
	var f [numFields]float64
	for i := range f {
		f[i] = clamp01(cur[i] + vel[i]*float64(h))
	}
	return scores(f)
}

// fit returns the least-squares slope per observation of every field over
// pts, and the residual standard deviation of the overall fit:
// sqrt(SSR / (n − 2)), 0 for fewer than three points. Fewer than two points,
// or points all at one step, give zero slopes.
func fit(pts []governor.DriftPoint) (governor.DriftScores, float64) {
	n := len(pts)
	if n < 2 {
		return governor.DriftScores{}, 0
	}
	var mx float64
	var my [numFields]float64
	for _, p := range pts {
		mx += float64(p.Step)
		f := fields(p.Drift)
		for i := range my {
			my[i] += f[i]
		}
	}
	mx /= float64(n)
	for i := range my {
		my[i] /= float64(n)
	}
	var sxx float64
	var sxy [numFields]float64
	for _, p := range pts {
		dx := float64(p.Step) - mx
		sxx += dx * dx
		f := fields(p.Drift)
		for i := range sxy {
			sxy[i] += dx * (f[i] - my[i])
		}
	}
	var slope [numFields]float64
	if sxx > 0 {
		for i := range slope {
			slope[i] = sxy[i] / sxx
		}
	}
	if n < 3 {
		return scores(slope), 0
	}
	const overall = numFields - 1
	var ssr float64
	for _, p := range pts {
		r := p.Drift.Overall - (my[overall] + slope[overall]*(float64(p.Step)-mx))
		ssr += r * r
	}
	return scores(slope), math.Sqrt(ssr / float64(n-2))
}

// clamp01 clamps x to [0, 1]; NaN becomes 0.
func clamp01(x float64) float64 {
	if x > 1 {
		return 1
	}
	if x >= 0 {
		return x
	}
	return 0
}
