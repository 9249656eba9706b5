package trajectory

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/governor"
)

// fleetHistory is a realistic drift history of agent i of a fleet: 20
// recomputations 10 observations apart, rising, steady or falling with the
// agent, with a small wobble.
func fleetHistory(i int) []governor.DriftPoint {
	slope := float64(i%9-3) * 0.0004 // −0.0012 … +0.002 per observation
	base := 0.02 + float64(i%13)*0.015
	h := make([]governor.DriftPoint, 20)
	for k := range h {
		d := base + slope*float64(10*k) + 0.004*float64((i+k)%5-2)
		d = clamp01(d)
		h[k] = governor.DriftPoint{Step: 20 + 10*k, Drift: governor.DriftScores{
			Action: d * 1.2, Target: d * 0.9, Temporal: d * 0.5, Outcome: d * 0.7, Semantic: d, Overall: d,
		}}
	}
	return h
}

// cachedPolicies returns how many agents' policies the cache holds.
func (a *Analyzer) cachedPolicies() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries)
}

func TestAnalyzeIsProjectOptimizeRecommend(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 200
	past := []Past{{Step: 25, Type: Advisory, Applied: true}}
	cases := []struct {
		name    string
		history []governor.DriftPoint
		thr     governor.Thresholds
		past    []Past
	}{
		{"no history", nil, defaults, nil},
		{"one point", history([]int{20}, []float64{0.3}), defaults, nil},
		{"rising", history([]int{20, 30, 40, 50}, []float64{0.1, 0.15, 0.2, 0.25}), defaults, past},
		{"falling", history([]int{20, 30, 40}, []float64{0.5, 0.4, 0.3}), defaults, nil},
		{"tightened thresholds", fleetHistory(4), defaults.Scale(0.5), past},
	}
	for _, tc := range cases {
		for _, optimizer := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s optimizer %v", tc.name, optimizer), func(t *testing.T) {
				got := NewAnalyzer(cfg, optimizer).Analyze("a1", tc.history, tc.thr, tc.past)
				tr := Project(tc.history, tc.thr, tc.past, cfg)
				want := Analysis{AgentID: "a1", Trajectory: tr}
				if optimizer {
					p := Optimize(tr, cfg.Horizon, cfg)
					want.Policy, want.PolicyState = &p, PolicyCurrent
				}
				want.Recommendation = Recommend(tr, want.Policy)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %+v, want %+v", got, want)
				}
				if wantSource := map[bool]string{false: SourceThreshold, true: SourceOptimizer}[optimizer]; got.Recommendation.Source != wantSource {
					t.Errorf("recommendation source: got %q, want %q", got.Recommendation.Source, wantSource)
				}
			})
		}
	}
}

func TestAnalyzerCachesPolicies(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 50
	h := fleetHistory(7)
	longer := append(fleetHistory(7), governor.DriftPoint{Step: 220, Drift: governor.DriftScores{Overall: 0.5}})
	// replaced has the same length and last step as h but another last score
	// (a restored snapshot, say).
	replaced := fleetHistory(7)
	replaced[len(replaced)-1].Drift.Overall += 0.1
	past := []Past{{Step: 30, Type: Throttle}}
	flat := history([]int{20, 30, 40, 50, 60, 70}, []float64{0.3, 0.3, 0.3, 0.3, 0.3, 0.3})
	flatter := history([]int{20, 30, 40, 50, 60, 70, 80}, []float64{0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3})

	// Each case asks for a1 with before, then for agent with history.
	cases := []struct {
		name     string
		before   []governor.DriftPoint
		agent    string
		history  []governor.DriftPoint
		thr      governor.Thresholds
		past     []Past
		wantSame bool
	}{
		{"same inputs", h, "a1", h, defaults, nil, true},
		{"a past intervention changes only markers", h, "a1", h, defaults, past, true},
		{"a new drift point", h, "a1", longer, defaults, nil, false},
		{"another last score", h, "a1", replaced, defaults, nil, false},
		{"tightened thresholds", h, "a1", h, defaults.Scale(0.8), nil, false},
		{"another agent", h, "a2", h, defaults, nil, false},
		{"a new drift point that changes nothing", flat, "a1", flatter, defaults, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAnalyzer(cfg, true)
			first := a.Analyze("a1", tc.before, defaults, nil)
			got := a.Analyze(tc.agent, tc.history, tc.thr, tc.past)
			if same := got.Policy == first.Policy; same != tc.wantSame {
				t.Errorf("policy reused: got %v, want %v", same, tc.wantSame)
			}
			if want := Optimize(Project(tc.history, tc.thr, nil, cfg), cfg.Horizon, cfg); !reflect.DeepEqual(*got.Policy, want) {
				t.Errorf("policy: got %+v, want %+v", *got.Policy, want)
			}
			if want := Project(tc.history, tc.thr, tc.past, cfg).Markers; !reflect.DeepEqual(got.Trajectory.Markers, want) {
				t.Errorf("markers: got %v, want %v", got.Trajectory.Markers, want)
			}
			// The entry follows the agent's latest inputs.
			if again := a.Analyze(tc.agent, tc.history, tc.thr, tc.past); again.Policy != got.Policy {
				t.Errorf("asked again: got a new policy, want the cached one")
			}
		})
	}
}

// TestOptimizeReadsOnlyThePolicyKey guards the Analyzer's cache key: two
// trajectories that differ in everything but the key's fields get the same
// policy.
func TestOptimizeReadsOnlyThePolicyKey(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 100
	a := Project(fleetHistory(3), defaults, []Past{{Step: 40, Type: Advisory}}, cfg)
	b := Trajectory{Current: a.Current, Velocity: a.Velocity, Sigma: a.Sigma, Thresholds: a.Thresholds, Risk: RiskCritical,
		Observed: []Point{{Step: 1}}, Markers: []Marker{{Step: 9, Type: Escalate}}}
	if pa, pb := Optimize(a, cfg.Horizon, cfg), Optimize(b, cfg.Horizon, cfg); !reflect.DeepEqual(pa, pb) {
		t.Errorf("policies: got %+v and %+v, want them equal", pa, pb)
	}
}

func TestAnalyzerWithoutOptimizerCachesNothing(t *testing.T) {
	a := NewAnalyzer(DefaultConfig(), false)
	for i := range 10 {
		if got := a.Analyze(fmt.Sprint("a", i), fleetHistory(i), defaults, nil); got.Policy != nil {
			t.Fatalf("agent %d: got a policy %+v, want none", i, got.Policy)
		}
	}
	if n := a.cachedPolicies(); n != 0 {
		t.Errorf("cache: got %d entries, want 0", n)
	}
	if a.Optimizer() {
		t.Errorf("Optimizer: got true, want false")
	}
}

func TestAnalyzerIsBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 10
	a := NewAnalyzer(cfg, true)
	a.limit = 8
	first := a.Analyze("a0", fleetHistory(0), defaults, nil)
	for i := 1; i < 30; i++ {
		a.Analyze(fmt.Sprint("a", i), fleetHistory(i), defaults, nil)
		a.Analyze("a0", fleetHistory(0), defaults, nil) // a0 stays in use
		if n := a.cachedPolicies(); n > a.limit {
			t.Fatalf("after %d agents: got %d entries, want at most %d", i+1, n, a.limit)
		}
	}
	if got := a.Analyze("a0", fleetHistory(0), defaults, nil); got.Policy != first.Policy {
		t.Errorf("a0, asked for all along: got a new policy, want the cached one")
	}
	if got := a.Analyze("a1", fleetHistory(1), defaults, nil); got.Policy == nil {
		t.Errorf("a1, forgotten: got no policy, want a recomputed one")
	}
}

// TestAnalyzerConcurrent analyzes a fleet from several goroutines at once,
// several of them asking for the same agents, and gets the serial answers.
func TestAnalyzerConcurrent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 50
	const agents, workers = 24, 6
	serial := NewAnalyzer(cfg, true)
	want := make([]Analysis, agents)
	for i := range want {
		want[i] = serial.Analyze(fmt.Sprint("a", i), fleetHistory(i), defaults, nil)
	}
	shared := NewAnalyzer(cfg, true)
	got := make([][]Analysis, workers)
	var wg sync.WaitGroup
	for w := range workers {
		got[w] = make([]Analysis, agents)
		wg.Go(func() {
			for k := range agents {
				i := (k + w*5) % agents // each worker in its own order
				got[w][i] = shared.Analyze(fmt.Sprint("a", i), fleetHistory(i), defaults, nil)
			}
		})
	}
	wg.Wait()
	for w := range workers {
		for i := range agents {
			g, x := got[w][i], want[i]
			if !reflect.DeepEqual(g.Trajectory, x.Trajectory) || g.Recommendation != x.Recommendation || !reflect.DeepEqual(*g.Policy, *x.Policy) {
				t.Errorf("worker %d, agent %d: got %+v, want %+v", w, i, g, x)
			}
			if g.Policy != got[0][i].Policy {
				t.Errorf("worker %d, agent %d: got a policy of its own, want the one cached", w, i)
			}
		}
	}
}

func TestNewAnalyzerNormalizesConfig(t *testing.T) {
	a := NewAnalyzer(Config{Window: -1, Seed: 7, Costs: Costs{Violation: 10}}, true)
	got := a.Config()
	want := Config{Window: 5, Lookahead: 20, Horizon: 50, Runs: 1000, Seed: 7, Costs: Costs{Violation: 10}}
	if got != want {
		t.Errorf("Config: got %+v, want %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if !a.Optimizer() {
		t.Errorf("Optimizer: got false, want true")
	}
}

// BenchmarkAnalyzer1000 analyzes a fleet of 1000 agents with 20-point
// histories on one goroutine, with the default Config: cold (a new Analyzer:
// 1000 optimizations) and warm (every policy cached: 1000 projections).
func BenchmarkAnalyzer1000(b *testing.B) {
	const agents = 1000
	ids := make([]string, agents)
	hs := make([][]governor.DriftPoint, agents)
	for i := range agents {
		ids[i], hs[i] = fmt.Sprintf("agent-%04d", i), fleetHistory(i)
	}
	fleet := func(a *Analyzer) {
		for i := range agents {
			a.Analyze(ids[i], hs[i], defaults, nil)
		}
	}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fleet(NewAnalyzer(DefaultConfig(), true))
		}
	})
	b.Run("warm", func(b *testing.B) {
		a := NewAnalyzer(DefaultConfig(), true)
		fleet(a)
		b.ReportAllocs()
		for b.Loop() {
			fleet(a)
		}
	})
	b.Run("optimizer off", func(b *testing.B) {
		a := NewAnalyzer(DefaultConfig(), false)
		b.ReportAllocs()
		for b.Loop() {
			fleet(a)
		}
	})
}
