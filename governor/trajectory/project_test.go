package trajectory

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
)

func TestProjectVelocity(t *testing.T) {
	tests := []struct {
		name  string
		steps []int
		drift []float64
		want  float64 // overall velocity per observation
	}{
		{"empty", nil, nil, 0},
		{"one point", []int{10}, []float64{0.3}, 0},
		{"two points", []int{10, 20}, []float64{0.1, 0.3}, 0.02},
		{"three points, fewer than the window", []int{10, 20, 30}, []float64{0.1, 0.2, 0.3}, 0.01},
		{"linear five", []int{10, 20, 30, 40, 50}, []float64{0.05, 0.07, 0.09, 0.11, 0.13}, 0.002},
		{"only the last five count", []int{10, 20, 30, 40, 50, 60, 70}, []float64{0.9, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1}, 0},
		{"falling", []int{0, 5, 10, 15, 20}, []float64{0.5, 0.45, 0.4, 0.35, 0.3}, -0.01},
		{"known least squares", []int{0, 10, 20}, []float64{0.1, 0.3, 0.2}, 0.005},
		{"all at one step", []int{10, 10, 10}, []float64{0.1, 0.2, 0.3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := Project(history(tt.steps, tt.drift), defaults, nil, DefaultConfig())
			assertNear(t, "velocity", tr.Velocity.Overall, tt.want)
			if n := len(tt.drift); n > 0 {
				assertNear(t, "current", tr.Current.Overall, tt.drift[n-1])
			}
			if len(tr.Observed) != len(tt.steps) {
				t.Errorf("observed: got %d points, want %d", len(tr.Observed), len(tt.steps))
			}
		})
	}
}

func TestProjectVelocityPerField(t *testing.T) {
	var h []governor.DriftPoint
	for i := range 5 {
		x := float64(i)
		h = append(h, governor.DriftPoint{Step: 10 * i, Drift: governor.DriftScores{
			Action: 0.1 + 0.01*x, Target: 0.5 - 0.02*x, Temporal: 0.2, Outcome: 0.03 * x, Semantic: 0.4 + 0.005*x, Overall: 0.2 + 0.01*x,
		}})
	}
	tr := Project(h, defaults, nil, DefaultConfig())
	want := governor.DriftScores{Action: 0.001, Target: -0.002, Temporal: 0, Outcome: 0.003, Semantic: 0.0005, Overall: 0.001}
	got, w := fields(tr.Velocity), fields(want)
	for i := range got {
		assertNear(t, "velocity field "+string(rune('0'+i)), got[i], w[i])
	}
}

func TestProjectProjection(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Horizon = 100
	h := []governor.DriftPoint{
		{Step: 90, Drift: governor.DriftScores{Action: 0.5, Target: 0.2, Overall: 0.5}},
		{Step: 100, Drift: governor.DriftScores{Action: 0.6, Target: 0.1, Overall: 0.6}},
	}
	tr := Project(h, defaults, nil, cfg)
	if len(tr.Projected) != cfg.Horizon {
		t.Fatalf("projected: got %d points, want %d", len(tr.Projected), cfg.Horizon)
	}
	tests := []struct {
		name              string
		h                 int
		action, target    float64
		overall, temporal float64
	}{
		{"one ahead", 1, 0.61, 0.09, 0.61, 0},
		{"ten ahead", 10, 0.7, 0, 0.7, 0},
		{"clamped at 1", 40, 1, 0, 1, 0},
		{"clamped at 0 and 1 far out", 100, 1, 0, 1, 0},
		{"target just above 0", 9, 0.69, 0.01, 0.69, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tr.Projected[tt.h-1]
			if p.Step != 100+tt.h {
				t.Errorf("step: got %d, want %d", p.Step, 100+tt.h)
			}
			assertNear(t, "action", p.Drift.Action, tt.action)
			assertNear(t, "target", p.Drift.Target, tt.target)
			assertNear(t, "overall", p.Drift.Overall, tt.overall)
			assertNear(t, "temporal", p.Drift.Temporal, tt.temporal)
		})
	}
	for _, p := range tr.Projected {
		for _, f := range fields(p.Drift) {
			if f < 0 || f > 1 {
				t.Fatalf("step %d: got a field %v, want it in [0, 1]", p.Step, f)
			}
		}
	}
}

func TestProjectEmpty(t *testing.T) {
	cfg := DefaultConfig()
	tr := Project(nil, defaults, nil, cfg)
	if tr.Current != (governor.DriftScores{}) || tr.Velocity != (governor.DriftScores{}) {
		t.Errorf("got current %+v velocity %+v, want zeros", tr.Current, tr.Velocity)
	}
	if tr.Sigma != cfg.MinSigma {
		t.Errorf("sigma: got %v, want %v", tr.Sigma, cfg.MinSigma)
	}
	if len(tr.Projected) != cfg.Horizon || tr.Projected[0].Step != 1 || tr.Projected[cfg.Horizon-1].Drift != (governor.DriftScores{}) {
		t.Errorf("projected: got %d points starting at %+v, want %d zero points from step 1", len(tr.Projected), tr.Projected[0], cfg.Horizon)
	}
	if tr.Observed == nil || tr.Markers == nil || len(tr.Observed)+len(tr.Markers) != 0 {
		t.Errorf("got observed %v markers %v, want empty non-nil slices", tr.Observed, tr.Markers)
	}
	if tr.Risk != RiskLow || tr.Thresholds != defaults {
		t.Errorf("got risk %q thresholds %+v, want low and %+v", tr.Risk, tr.Thresholds, defaults)
	}
}

func TestProjectSigma(t *testing.T) {
	tests := []struct {
		name     string
		steps    []int
		drift    []float64
		minSigma float64
		want     float64
	}{
		// Fit 0.2 + 0.005(x − 10): residuals −0.05, 0.1, −0.05; SSR 0.015 over n − 2 = 1.
		{"known residuals", []int{0, 10, 20}, []float64{0.1, 0.3, 0.2}, 0.005, math.Sqrt(0.015)},
		{"linear: the floor", []int{0, 10, 20, 30}, []float64{0.1, 0.2, 0.3, 0.4}, 0.005, 0.005},
		{"two points: the floor", []int{0, 10}, []float64{0.1, 0.9}, 0.005, 0.005},
		{"floor above the residuals", []int{0, 10, 20}, []float64{0.1, 0.3, 0.2}, 0.5, 0.5},
		{"zero floor", []int{0, 10, 20}, []float64{0.1, 0.2, 0.3}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MinSigma = tt.minSigma
			tr := Project(history(tt.steps, tt.drift), defaults, nil, cfg)
			assertNear(t, "sigma", tr.Sigma, tt.want)
		})
	}
}

func TestProjectRisk(t *testing.T) {
	tests := []struct {
		name  string
		steps []int
		drift []float64
		thr   governor.Thresholds
		want  RiskLevel
	}{
		{"zero", []int{10}, []float64{0}, defaults, RiskLow},
		{"just below moderate", []int{10}, []float64{0.1999}, defaults, RiskLow},
		{"at moderate", []int{10}, []float64{0.2}, defaults, RiskModerate},
		{"just below high", []int{10}, []float64{0.3999}, defaults, RiskModerate},
		{"at high", []int{10}, []float64{0.4}, defaults, RiskHigh},
		{"just below critical", []int{10}, []float64{0.5999}, defaults, RiskHigh},
		{"at critical", []int{10}, []float64{0.6}, defaults, RiskCritical},
		{"at 1", []int{10}, []float64{1}, defaults, RiskCritical},
		{"tightened: at moderate", []int{10}, []float64{0.1}, defaults.Scale(0.5), RiskModerate},
		{"tightened: at high", []int{10}, []float64{0.2}, defaults.Scale(0.5), RiskHigh},
		{"tightened: at critical", []int{10}, []float64{0.3}, defaults.Scale(0.5), RiskCritical},
		{"tightened: just below moderate", []int{10}, []float64{0.0999}, defaults.Scale(0.5), RiskLow},
		// 0.0625 + 20 × (0.0625/16) = 0.140625: exactly moderate.
		{"lookahead reaches moderate", []int{0, 16}, []float64{0, 0.0625}, governor.Thresholds{Low: 0.1, Moderate: 0.140625, High: 0.5, Critical: 0.75}, RiskModerate},
		{"lookahead falls short of moderate", []int{0, 16}, []float64{0, 0.0625}, governor.Thresholds{Low: 0.1, Moderate: 0.140626, High: 0.5, Critical: 0.75}, RiskLow},
		{"lookahead clamps at 1", []int{0, 10}, []float64{0.5, 0.9}, defaults, RiskCritical},
		{"falling below", []int{0, 10}, []float64{0.7, 0.5}, defaults, RiskLow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := Project(history(tt.steps, tt.drift), tt.thr, nil, DefaultConfig())
			if tr.Risk != tt.want {
				t.Errorf("got %q, want %q", tr.Risk, tt.want)
			}
			if tr.Thresholds != tt.thr {
				t.Errorf("thresholds: got %+v, want %+v", tr.Thresholds, tt.thr)
			}
		})
	}
}

func TestProjectMarkers(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// From 0.125 at step 16, rising 1/256 per observation: moderate (0.25) at
	// h = 32, high (0.5) at h = 96, critical (0.75) at h = 160.
	rising := history([]int{0, 16}, []float64{0.0625, 0.125})
	tests := []struct {
		name    string
		hist    []governor.DriftPoint
		horizon int
		past    []Past
		want    []Marker
	}{
		{"all three crossings", rising, 200, nil, []Marker{{48, Advisory, true}, {112, Throttle, true}, {176, Escalate, true}}},
		{"horizon ends before high", rising, 90, nil, []Marker{{48, Advisory, true}}},
		{"exactly at the horizon", rising, 32, nil, []Marker{{48, Advisory, true}}},
		{"one short of the horizon", rising, 31, nil, []Marker{}},
		{"flat never crosses", history([]int{0, 16}, []float64{0.1, 0.1}), 200, nil, []Marker{}},
		{"falling never crosses", history([]int{0, 16}, []float64{0.2, 0.1}), 200, nil, []Marker{}},
		{"already above moderate: only the higher crossings",
			history([]int{0, 16}, []float64{0.25, 0.3125}), 200, nil, []Marker{{64, Throttle, true}, {128, Escalate, true}}},
		{"past kept, unplanned, in step order", rising, 90,
			[]Past{
				{Step: 12, Type: Throttle, Reason: "tighten", Applied: true, Time: at},
				{Step: 3, Type: Advisory, Reason: "optimizer", Applied: false, Time: at},
				{Step: 14, Type: None},
			},
			[]Marker{{3, Advisory, false}, {12, Throttle, false}, {48, Advisory, true}}},
		{"past only", nil, 10, []Past{{Step: 5, Type: Escalate}}, []Marker{{5, Escalate, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Horizon = tt.horizon
			tr := Project(tt.hist, binary, tt.past, cfg)
			if !reflect.DeepEqual(tr.Markers, tt.want) {
				t.Errorf("got %v, want %v", tr.Markers, tt.want)
			}
		})
	}
}

func TestProjectShortConfig(t *testing.T) {
	// An invalid config falls back to the defaults field by field.
	tr := Project(history([]int{1, 2}, []float64{0.1, 0.2}), defaults, nil, Config{})
	if len(tr.Projected) != DefaultConfig().Horizon {
		t.Errorf("projected: got %d points, want %d", len(tr.Projected), DefaultConfig().Horizon)
	}
}
