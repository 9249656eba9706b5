package trajectory

import (
	"reflect"
	"testing"
)

// The hand-checked case: overall drift 0.125, velocity 0.0625 per
// observation, no noise, thresholds 0.125/0.25/0.5/0.75, horizon 12.
//
//	no_op: d(t) = 0.125 + 0.0625t reaches 0.75 at t = 10: violation.
//	  cost 200 (0 + 200).
//	early_advisory: advisory at 0 (cost 1); d(1) = 0.1875, then v = 0.04375,
//	  d(12) = 0.1875 + 11 × 0.04375 = 0.66875 < 0.75: no violation.
//	  cost 1.
//	wait_and_throttle: d(6) = 0.5 ≥ high: throttle at 6. Throttled moves are
//	  halved and v is cut by 0.6 each step:
//	  d(7) = 0.5 + 0.03125 = 0.53125 (v 0.025), d(8) = 0.54375 (v 0.01),
//	  d(9) = 0.54875, d(10) = 0.55075, d(11) = 0.55155, d(12) = 0.551870.
//	  Throttle active at steps 6..11: 6 × 5 = 30. cost 30.
//	immediate_escalate: escalate at 0, drift frozen. cost 50.
//	graduated: d(2) = 0.25 ≥ moderate: advisory at 2 (cost 1); v = 0.04375
//	  from step 3: d(3) = 0.3125, d(7) = 0.4875, d(8) = 0.53125 ≥ high:
//	  throttle at 8: d(9) = 0.553125, d(10) = 0.561875, d(11) = 0.565375,
//	  d(12) = 0.566775. Throttle at steps 8..11: 4 × 5 = 20. cost 21.
var handCase = struct {
	d0, v   float64
	horizon int
	cost    map[Strategy]Cost
	sched   map[Strategy][]Step
	final   map[Strategy]float64
}{
	d0: 0.125, v: 0.0625, horizon: 12,
	cost: map[Strategy]Cost{
		NoOp:              {0, 200, 200},
		EarlyAdvisory:     {1, 0, 1},
		WaitAndThrottle:   {30, 0, 30},
		ImmediateEscalate: {50, 0, 50},
		Graduated:         {21, 0, 21},
	},
	sched: map[Strategy][]Step{
		NoOp:              {},
		EarlyAdvisory:     {{0, Advisory}},
		WaitAndThrottle:   {{6, Throttle}},
		ImmediateEscalate: {{0, Escalate}},
		Graduated:         {{2, Advisory}, {8, Throttle}},
	},
	final: map[Strategy]float64{
		NoOp:              0.875,
		EarlyAdvisory:     0.66875,
		WaitAndThrottle:   0.55187,
		ImmediateEscalate: 0.125,
		Graduated:         0.566775,
	},
}

func TestRunHandChecked(t *testing.T) {
	hc := handCase
	m := newModel(overall(hc.d0, hc.v, 0, binary), hc.horizon, exact(1))
	for _, s := range Strategies() {
		t.Run(string(s), func(t *testing.T) {
			r := rulesFor(s, m.moderate, m.high, m.critical)
			curve := make([]float64, hc.horizon)
			var sched = []Step{}
			iv, viol := m.run(r, nil, curve, &sched)
			want := hc.cost[s]
			assertNear(t, "intervention cost", iv, want.Intervention)
			assertNear(t, "violation cost", viol, want.Violation)
			if !reflect.DeepEqual(sched, hc.sched[s]) {
				t.Errorf("schedule: got %v, want %v", sched, hc.sched[s])
			}
			assertNear(t, "final drift", curve[hc.horizon-1], hc.final[s])
		})
	}
}

func TestRunThrottlePath(t *testing.T) {
	m := newModel(overall(handCase.d0, handCase.v, 0, binary), handCase.horizon, exact(1))
	curve := make([]float64, handCase.horizon)
	m.run(rulesFor(WaitAndThrottle, m.moderate, m.high, m.critical), nil, curve, nil)
	// d(1)..d(12): unthrottled to 0.5 at step 6, then half-rate moves with
	// the velocity cut by 0.6 per step.
	want := []float64{0.1875, 0.25, 0.3125, 0.375, 0.4375, 0.5, 0.53125, 0.54375, 0.54875, 0.55075, 0.55155, 0.55187}
	for i := range want {
		assertNear(t, "d("+itoa(i+1)+")", curve[i], want[i])
	}
}

func TestRunEscalationAndViolation(t *testing.T) {
	tests := []struct {
		name     string
		s        Strategy
		d0, v    float64
		horizon  int
		want     Cost
		schedule []Step
	}{
		// 0.125 → 0.375 (advisory at 1) → 0.625 (throttle at 2) → 0.7125
		// → 0.7475 → 0.7615 ≥ 0.75: escalate at 5, before the violation.
		// 1 + 3 × 5 + 50 = 66; no throttle cost once escalated.
		{"graduated escalates at critical, no violation", Graduated, 0.125, 0.25, 10, Cost{66, 0, 66},
			[]Step{{1, Advisory}, {2, Throttle}, {5, Escalate}}},
		{"already critical: graduated escalates now", Graduated, 0.8, 0, 10, Cost{50, 0, 50}, []Step{{0, Escalate}}},
		{"already critical: no_op violates once", NoOp, 0.8, 0.1, 10, Cost{0, 200, 200}, []Step{}},
		{"already critical: throttle does not prevent the violation", WaitAndThrottle, 0.8, 0, 4, Cost{20, 200, 220}, []Step{{0, Throttle}}},
		{"immediate escalate at critical: no violation", ImmediateEscalate, 0.9, 0.1, 10, Cost{50, 0, 50}, []Step{{0, Escalate}}},
		// Throttled at 0, d(1) = 0.6875 + 0.125/2 = 0.75 is the final state:
		// no step is left to react, so it counts.
		{"crossing on the last move counts", Graduated, 0.6875, 0.125, 1, Cost{5, 200, 205}, []Step{{0, Throttle}}},
		{"falling drift: no_op is free", NoOp, 0.5, -0.1, 50, Cost{0, 0, 0}, []Step{}},
		{"graduated skips the advisory when drift starts above high", Graduated, 0.55, 0, 3, Cost{15, 0, 15}, []Step{{0, Throttle}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(overall(tt.d0, tt.v, 0, binary), tt.horizon, exact(1))
			sched := []Step{}
			iv, viol := m.run(rulesFor(tt.s, m.moderate, m.high, m.critical), nil, nil, &sched)
			assertNear(t, "intervention", iv, tt.want.Intervention)
			assertNear(t, "violation", viol, tt.want.Violation)
			if !reflect.DeepEqual(sched, tt.schedule) {
				t.Errorf("schedule: got %v, want %v", sched, tt.schedule)
			}
		})
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
