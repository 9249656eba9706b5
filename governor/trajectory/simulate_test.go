package trajectory

import (
	"reflect"
	"testing"
)

func TestSimulateShape(t *testing.T) {
	tr := Project(history([]int{10, 20, 30, 40}, []float64{0.3, 0.35, 0.38, 0.45}), defaults, nil, DefaultConfig())
	cfg := DefaultConfig()
	cfg.Runs = 50
	for _, s := range Strategies() {
		for _, h := range []int{1, 50, 1000} {
			sim := Simulate(tr, s, h, cfg)
			if len(sim.Curve) != h || sim.Horizon != h || sim.Strategy != s {
				t.Fatalf("%s, horizon %d: got %d points, horizon %d, strategy %q", s, h, len(sim.Curve), sim.Horizon, sim.Strategy)
			}
			for i, d := range sim.Curve {
				if !(d >= 0 && d <= 1) {
					t.Fatalf("%s, horizon %d: point %d got %v, want it in [0, 1]", s, h, i, d)
				}
			}
			for _, m := range sim.Markers {
				if !m.Planned || m.Step < 40 || m.Step >= 40+h {
					t.Fatalf("%s, horizon %d: marker %+v, want planned in [40, %d)", s, h, m, 40+h)
				}
			}
			if sim.EstimatedCost < 0 {
				t.Fatalf("%s: estimated cost %v", s, sim.EstimatedCost)
			}
		}
	}
}

func TestSimulateMatchesOptimize(t *testing.T) {
	tr := overall(0.35, 0.008, 0.03, defaults)
	cfg := DefaultConfig()
	cfg.Runs = 200
	p := Optimize(tr, 60, cfg)
	for i, s := range Strategies() {
		sim := Simulate(tr, s, 60, cfg)
		if sim.EstimatedCost != p.Outcomes[i].Expected.Total {
			t.Errorf("%s: got %v, want the optimizer's %v", s, sim.EstimatedCost, p.Outcomes[i].Expected.Total)
		}
	}
	if got, again := Simulate(tr, Graduated, 60, cfg), Simulate(tr, Graduated, 60, cfg); !reflect.DeepEqual(got, again) {
		t.Errorf("same seed: got different simulations")
	}
}

func TestSimulateHandChecked(t *testing.T) {
	hc := handCase
	tr := overall(hc.d0, hc.v, 0, binary)
	tr.Observed = []Point{{Step: 100}}
	for _, s := range Strategies() {
		t.Run(string(s), func(t *testing.T) {
			sim := Simulate(tr, s, hc.horizon, exact(4))
			assertNear(t, "cost", sim.EstimatedCost, hc.cost[s].Total)
			assertNear(t, "final", sim.Curve[hc.horizon-1], hc.final[s])
			assertNear(t, "current drift", sim.CurrentDrift, hc.d0)
			assertNear(t, "current velocity", sim.CurrentVelocity, hc.v)
			want := make([]Marker, len(hc.sched[s]))
			for i, st := range hc.sched[s] {
				want[i] = Marker{Step: 100 + st.Step, Type: st.Intervention, Planned: true}
			}
			if !reflect.DeepEqual(sim.Markers, want) {
				t.Errorf("markers: got %v, want %v", sim.Markers, want)
			}
		})
	}
}

func TestSimulateUnknownStrategy(t *testing.T) {
	tr := overall(0.3, 0.01, 0, defaults)
	got, want := Simulate(tr, "bogus", 10, exact(2)), Simulate(tr, NoOp, 10, exact(2))
	if !reflect.DeepEqual(got.Curve, want.Curve) || got.EstimatedCost != want.EstimatedCost {
		t.Errorf("got %+v, want the no_op simulation %+v", got, want)
	}
}
