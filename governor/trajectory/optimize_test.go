package trajectory

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestOptimizeHandChecked(t *testing.T) {
	hc := handCase // costs worked out by hand in model_test.go
	tr := overall(hc.d0, hc.v, 0, binary)
	p := Optimize(tr, hc.horizon, exact(10))

	for i, s := range Strategies() {
		o := p.Outcomes[i]
		if o.Strategy != s {
			t.Fatalf("outcome %d: got %q, want %q", i, o.Strategy, s)
		}
		want := hc.cost[s]
		assertNear(t, string(s)+" intervention", o.Expected.Intervention, want.Intervention)
		assertNear(t, string(s)+" violation", o.Expected.Violation, want.Violation)
		assertNear(t, string(s)+" total", o.Expected.Total, want.Total)
		assertNear(t, string(s)+" stderr", o.StdErr, 0)
	}
	if p.Strategy != EarlyAdvisory {
		t.Errorf("strategy: got %q, want %q", p.Strategy, EarlyAdvisory)
	}
	if want := []Step{{0, Advisory}}; !reflect.DeepEqual(p.Schedule, want) {
		t.Errorf("schedule: got %v, want %v", p.Schedule, want)
	}
	assertNear(t, "expected", p.Expected.Total, 1)
	assertNear(t, "confidence", p.Confidence, 1)
	want := Comparison{OptimizedCost: 1, NaiveCost: 50, SavingsPercent: 98}
	assertNear(t, "optimized", p.Comparison.OptimizedCost, want.OptimizedCost)
	assertNear(t, "naive", p.Comparison.NaiveCost, want.NaiveCost)
	assertNear(t, "savings", p.Comparison.SavingsPercent, want.SavingsPercent)
	if got := Recommend(tr, &p); got != (Recommendation{Advisory, SourceOptimizer}) {
		t.Errorf("recommendation: got %+v, want advisory from the optimizer", got)
	}
	if len(p.Conditions) == 0 || !strings.Contains(p.DecisionTree, "early_advisory") || !strings.Contains(p.DecisionTree, "\n") {
		t.Errorf("got conditions %v and tree %q, want clauses and a multi-line tree naming the strategy", p.Conditions, p.DecisionTree)
	}
}

func TestOptimizeWinners(t *testing.T) {
	tests := []struct {
		name     string
		tr       Trajectory
		costs    *Costs
		want     Strategy
		schedule []Step
	}{
		{"calm agent: do nothing", overall(0.05, 0, 0, defaults), nil, NoOp, []Step{}},
		{"falling drift: do nothing", overall(0.5, -0.05, 0, defaults), nil, NoOp, []Step{}},
		// Graduated escalates at 0.6 for 50 + advisory 1 + throttle; immediate
		// escalation costs 50 alone: the naive baseline wins.
		{"already critical: escalate now", overall(0.7, 0.01, 0, defaults), nil, ImmediateEscalate, []Step{{0, Escalate}}},
		{"free interventions tie: the earliest strategy wins", overall(0.1, 0, 0, defaults), &Costs{}, NoOp, []Step{}},
		{"cheap throttle", overall(0.35, 0.02, 0, defaults), &Costs{Advisory: 100, ThrottlePerStep: 0.1, Escalate: 100, Violation: 200}, WaitAndThrottle, []Step{{3, Throttle}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := exact(5)
			if tt.costs != nil {
				cfg.Costs = *tt.costs
			}
			p := Optimize(tt.tr, 50, cfg)
			if p.Strategy != tt.want {
				t.Errorf("strategy: got %q, want %q (outcomes %+v)", p.Strategy, tt.want, p.Outcomes)
			}
			if !reflect.DeepEqual(p.Schedule, tt.schedule) {
				t.Errorf("schedule: got %v, want %v", p.Schedule, tt.schedule)
			}
		})
	}
}

func TestOptimizeDeterministic(t *testing.T) {
	tr := overall(0.45, 0.006, 0.04, defaults)
	cfg := DefaultConfig()
	cfg.Seed = 42
	a, b := Optimize(tr, 50, cfg), Optimize(tr, 50, cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed: got %+v and %+v, want identical policies", a, b)
	}
	cfg.Seed = 43
	c := Optimize(tr, 50, cfg)
	if reflect.DeepEqual(a.Outcomes, c.Outcomes) {
		t.Errorf("different seeds: got identical outcomes %+v, want the noise to differ", a.Outcomes)
	}
	// Noise is real: the violation risk of no_op is neither 0 nor certain.
	if v := a.Outcomes[0].Expected.Violation; v <= 0 || v >= 200 {
		t.Errorf("no_op violation cost: got %v, want strictly between 0 and 200", v)
	}
}

func TestOptimizeProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	cfg := DefaultConfig()
	cfg.Runs = 60
	for i := range 300 {
		thr := defaults.Scale(0.3 + rng.Float64())
		tr := overall(rng.Float64(), (rng.Float64()-0.4)*0.05, rng.Float64()*0.1, thr)
		horizon := 1 + rng.IntN(80)
		cfg.Seed = uint64(i)
		if i%7 == 0 {
			cfg.Costs = Costs{Advisory: rng.Float64() * 10, ThrottlePerStep: rng.Float64() * 10, Escalate: rng.Float64() * 100, Violation: rng.Float64() * 400}
		}
		p := Optimize(tr, horizon, cfg)
		if p.Comparison.SavingsPercent < 0 || p.Comparison.SavingsPercent > 100 {
			t.Fatalf("case %d: savings got %v, want in [0, 100]", i, p.Comparison.SavingsPercent)
		}
		if !(p.Confidence >= 0 && p.Confidence <= 1) {
			t.Fatalf("case %d: confidence got %v, want in [0, 1]", i, p.Confidence)
		}
		if len(p.Outcomes) != 5 {
			t.Fatalf("case %d: got %d outcomes, want 5", i, len(p.Outcomes))
		}
		for j, o := range p.Outcomes {
			if o.Strategy != Strategies()[j] {
				t.Fatalf("case %d: outcome %d got %q, want %q", i, j, o.Strategy, Strategies()[j])
			}
			if o.Expected.Total < p.Expected.Total || (o.Expected.Total == p.Expected.Total && j < indexOf(p.Strategy)) {
				t.Fatalf("case %d: %s costs %v, cheaper than or tied before the winner %s at %v", i, o.Strategy, o.Expected.Total, p.Strategy, p.Expected.Total)
			}
			if o.StdErr < 0 || math.IsNaN(o.StdErr) {
				t.Fatalf("case %d: %s stderr got %v, want >= 0", i, o.Strategy, o.StdErr)
			}
		}
		if p.Comparison.NaiveCost != p.Outcomes[3].Expected.Total || p.Comparison.OptimizedCost != p.Expected.Total {
			t.Fatalf("case %d: comparison %+v does not match the outcomes", i, p.Comparison)
		}
		for _, s := range p.Schedule {
			if s.Step < 0 || s.Step >= horizon {
				t.Fatalf("case %d: schedule step %d outside [0, %d)", i, s.Step, horizon)
			}
		}
	}
}

func indexOf(s Strategy) int {
	for i, x := range Strategies() {
		if x == s {
			return i
		}
	}
	return -1
}

func TestOptimizeHorizons(t *testing.T) {
	tr := Project(history([]int{10, 20, 30}, []float64{0.2, 0.25, 0.32}), defaults, nil, DefaultConfig())
	for _, h := range []int{1, 1000, 0} {
		cfg := DefaultConfig()
		cfg.Runs = 100
		p := Optimize(tr, h, cfg)
		if p.Strategy == "" || p.Expected.Total < 0 {
			t.Errorf("horizon %d: got %+v, want a policy", h, p)
		}
	}
}

func TestConfidence(t *testing.T) {
	tests := []struct {
		name         string
		mean, stderr float64
		want         float64
	}{
		{"zero mean", 0, 0, 1},
		{"no error", 10, 0, 1},
		{"a tenth", 10, 1, 0.9},
		{"error above the mean", 1, 5, 0},
		{"NaN", 1, math.NaN(), 0},
	}
	for _, tt := range tests {
		if got := confidence(tt.mean, tt.stderr); !near(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestConditions(t *testing.T) {
	for _, s := range Strategies() {
		cs := conditions(s, defaults, 20)
		if len(cs) == 0 {
			t.Errorf("%s: got no conditions, want some", s)
		}
	}
	want := Condition{If: "drift < 0.15 within 20 actions", Then: "stand down"}
	if got := conditions(EarlyAdvisory, defaults, 20); !reflect.DeepEqual(got[len(got)-1], want) {
		t.Errorf("got %+v, want %+v", got[len(got)-1], want)
	}
	// Tightened thresholds read without float noise.
	got := conditions(Graduated, defaults.Scale(0.7), 20)
	if got[0].If != "drift >= 0.14" {
		t.Errorf("got %q, want %q", got[0].If, "drift >= 0.14")
	}
}

func TestDecisionTree(t *testing.T) {
	p := Optimize(overall(0.3, 0.01, 0, defaults), 50, exact(3))
	for _, want := range []string{string(p.Strategy), "at each step:", "expected path:", "immediate_escalate"} {
		if !strings.Contains(p.DecisionTree, want) {
			t.Errorf("tree %q: want it to contain %q", p.DecisionTree, want)
		}
	}
	t.Log("\n" + p.DecisionTree)
}
