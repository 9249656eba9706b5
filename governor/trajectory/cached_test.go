package trajectory

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vigilhq/vigil/governor"
)

// countOptimize makes a count its optimizations.
func countOptimize(a *Analyzer) *atomic.Int64 {
	var n atomic.Int64
	inner := a.optimize
	a.optimize = func(t Trajectory, horizon int, cfg Config) Policy {
		n.Add(1)
		return inner(t, horizon, cfg)
	}
	return &n
}

// holdOptimize makes a's optimizations of the trajectories hold picks wait
// until release is called; entered receives one value as each begins.
func holdOptimize(a *Analyzer, hold func(Trajectory) bool) (entered <-chan struct{}, release func()) {
	in, gate := make(chan struct{}, 16), make(chan struct{})
	inner := a.optimize
	a.optimize = func(t Trajectory, horizon int, cfg Config) Policy {
		if hold(t) {
			in <- struct{}{}
			<-gate
		}
		return inner(t, horizon, cfg)
	}
	return in, sync.OnceFunc(func() { close(gate) })
}

// ask is one agent's inputs.
type ask struct {
	agent   string
	history []governor.DriftPoint
	thr     governor.Thresholds
	past    []Past
}

func TestAnalyzerCached(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 50
	h := ask{"a1", fleetHistory(7), defaults, nil}
	longer := ask{"a1", append(fleetHistory(7), governor.DriftPoint{Step: 220, Drift: governor.DriftScores{Overall: 0.5}}), defaults, nil}
	tightened := ask{"a1", fleetHistory(7), defaults.Scale(0.8), nil}
	withPast := ask{"a1", fleetHistory(7), defaults, []Past{{Step: 30, Type: Throttle}}}
	other := ask{"a2", fleetHistory(3), defaults, nil}

	// Each case analyzes the asks of analyzed in order, then peeks at
	// peek; wantFrom is the index in analyzed of the analysis whose policy
	// the peek must return (-1: none).
	cases := []struct {
		name      string
		optimizer bool
		analyzed  []ask
		peek      ask
		wantState PolicyState
		wantFrom  int
	}{
		{"cold", true, nil, h, PolicyPending, -1},
		{"the same inputs analyzed", true, []ask{h}, h, PolicyCurrent, 0},
		{"a past intervention changes only markers", true, []ask{h}, withPast, PolicyCurrent, 0},
		{"a new drift point since", true, []ask{h}, longer, PolicyStale, 0},
		{"thresholds tightened since", true, []ask{h}, tightened, PolicyStale, 0},
		{"another agent analyzed", true, []ask{other}, h, PolicyPending, -1},
		{"analyzed again after the change", true, []ask{h, longer}, longer, PolicyCurrent, 1},
		{"back to earlier inputs: the latest policy", true, []ask{h, longer}, h, PolicyStale, 1},
		{"optimizer off", false, []ask{h}, longer, "", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAnalyzer(cfg, tc.optimizer)
			var done []Analysis
			for _, x := range tc.analyzed {
				done = append(done, a.Analyze(x.agent, x.history, x.thr, x.past))
			}
			calls := countOptimize(a)
			got, refresh := a.Cached(tc.peek.agent, tc.peek.history, tc.peek.thr, tc.peek.past)
			if n := calls.Load(); n != 0 {
				t.Errorf("Cached optimized %d times, want never", n)
			}
			tr := Project(tc.peek.history, tc.peek.thr, tc.peek.past, cfg)
			want := Analysis{AgentID: tc.peek.agent, Trajectory: tr, PolicyState: tc.wantState}
			if tc.wantFrom >= 0 {
				want.Policy = done[tc.wantFrom].Policy
			}
			want.Recommendation = Recommend(tr, want.Policy)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if got.Policy != want.Policy {
				t.Errorf("policy: got %p, want the cached %p", got.Policy, want.Policy)
			}
			if wantRefresh := tc.optimizer && tc.wantState != PolicyCurrent; refresh != wantRefresh {
				t.Errorf("refresh: got %v, want %v", refresh, wantRefresh)
			}
			if tc.wantState == PolicyPending && got.Recommendation.Source != SourceThreshold {
				t.Errorf("pending recommendation: got %+v, want the thresholds'", got.Recommendation)
			}
			if tc.wantState == PolicyCurrent {
				if an := a.Analyze(tc.peek.agent, tc.peek.history, tc.peek.thr, tc.peek.past); !reflect.DeepEqual(got, an) {
					t.Errorf("current: got %+v, want Analyze's %+v", got, an)
				}
			}
		})
	}
}

func TestAnalyzerCachedAddsNothing(t *testing.T) {
	a := NewAnalyzer(DefaultConfig(), true)
	calls := countOptimize(a)
	for i := range 10 {
		if _, refresh := a.Cached(fmt.Sprint("a", i), fleetHistory(i), defaults, nil); !refresh {
			t.Errorf("agent %d: got no refresh needed, want one", i)
		}
	}
	if n, c := a.cachedPolicies(), calls.Load(); n != 0 || c != 0 {
		t.Errorf("got %d entries and %d optimizations, want none", n, c)
	}
}

func TestAnalyzerCachedForgotten(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 10
	a := NewAnalyzer(cfg, true)
	a.limit = 4
	for i := range 8 {
		a.Analyze(fmt.Sprint("a", i), fleetHistory(i), defaults, nil)
	}
	var pending int
	for i := range 8 {
		got, _ := a.Cached(fmt.Sprint("a", i), fleetHistory(i), defaults, nil)
		if got.PolicyState == PolicyPending {
			pending++
		}
	}
	if n := a.cachedPolicies(); n > a.limit || pending != 8-n {
		t.Errorf("got %d entries and %d pending, want at most %d entries and the others pending", n, pending, a.limit)
	}
}

// TestAnalyzerCachedDoesNotWait peeks while an optimization is in progress:
// Cached answers at once with what is complete.
func TestAnalyzerCachedDoesNotWait(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 20
	h, longer := fleetHistory(7), append(fleetHistory(7), governor.DriftPoint{Step: 220, Drift: governor.DriftScores{Overall: 0.5}})
	cases := []struct {
		name      string
		before    []governor.DriftPoint // analyzed first (nil: nothing)
		wantState PolicyState
	}{
		{"cold", nil, PolicyPending},
		{"with an earlier policy", h, PolicyStale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAnalyzer(cfg, true)
			var first Analysis
			if tc.before != nil {
				first = a.Analyze("a1", tc.before, defaults, nil)
			}
			entered, release := holdOptimize(a, func(tr Trajectory) bool { return tr.Current.Overall == 0.5 })
			defer release()
			analyzed := make(chan Analysis)
			go func() { analyzed <- a.Analyze("a1", longer, defaults, nil) }()
			<-entered
			got, refresh := a.Cached("a1", longer, defaults, nil)
			if got.PolicyState != tc.wantState || got.Policy != first.Policy || !refresh {
				t.Errorf("in progress: got %s policy %p refresh %v, want %s %p true", got.PolicyState, got.Policy, refresh, tc.wantState, first.Policy)
			}
			if tc.before != nil {
				if got, _ := a.Cached("a1", h, defaults, nil); got.PolicyState != PolicyCurrent || got.Policy != first.Policy {
					t.Errorf("the earlier inputs: got %s %p, want current %p", got.PolicyState, got.Policy, first.Policy)
				}
			}
			release()
			an := <-analyzed
			if got, refresh := a.Cached("a1", longer, defaults, nil); got.PolicyState != PolicyCurrent || got.Policy != an.Policy || refresh {
				t.Errorf("complete: got %s %p refresh %v, want current %p false", got.PolicyState, got.Policy, refresh, an.Policy)
			}
		})
	}
}

// TestAnalyzerKeepsTheLatestInputsPolicy completes an older computation
// after a newer one: the newer stays the agent's policy.
func TestAnalyzerKeepsTheLatestInputsPolicy(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 20
	h, longer := fleetHistory(7), append(fleetHistory(7), governor.DriftPoint{Step: 220, Drift: governor.DriftScores{Overall: 0.5}})
	a := NewAnalyzer(cfg, true)
	old := Project(h, defaults, nil, cfg).Current.Overall
	entered, release := holdOptimize(a, func(tr Trajectory) bool { return tr.Current.Overall == old })
	defer release()
	slow := make(chan Analysis)
	go func() { slow <- a.Analyze("a1", h, defaults, nil) }()
	<-entered
	newer := a.Analyze("a1", longer, defaults, nil)
	release()
	<-slow
	if got, _ := a.Cached("a1", longer, defaults, nil); got.PolicyState != PolicyCurrent || got.Policy != newer.Policy {
		t.Errorf("latest inputs: got %s %p, want current %p", got.PolicyState, got.Policy, newer.Policy)
	}
	if got, _ := a.Cached("a1", h, defaults, nil); got.PolicyState != PolicyStale || got.Policy != newer.Policy {
		t.Errorf("earlier inputs: got %s %p, want stale with the latest policy %p", got.PolicyState, got.Policy, newer.Policy)
	}
}

// TestAnalyzerPanicDoesNotPoison makes Optimize panic once: the cache keeps
// what it had, and the next Analyze computes the policy.
func TestAnalyzerPanicDoesNotPoison(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 20
	h, longer := fleetHistory(7), append(fleetHistory(7), governor.DriftPoint{Step: 220, Drift: governor.DriftScores{Overall: 0.5}})
	cases := []struct {
		name      string
		before    []governor.DriftPoint // analyzed first (nil: nothing)
		wantState PolicyState           // of longer after the panic
	}{
		{"cold", nil, PolicyPending},
		{"with an earlier policy", h, PolicyStale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAnalyzer(cfg, true)
			var first Analysis
			if tc.before != nil {
				first = a.Analyze("a1", tc.before, defaults, nil)
			}
			inner, panicked := a.optimize, false
			a.optimize = func(tr Trajectory, horizon int, cfg Config) Policy {
				if !panicked {
					panicked = true
					panic("optimizer bug")
				}
				return inner(tr, horizon, cfg)
			}
			func() {
				defer func() {
					if r := recover(); r != "optimizer bug" {
						t.Errorf("Analyze: got panic %v, want the optimizer's", r)
					}
				}()
				a.Analyze("a1", longer, defaults, nil)
			}()
			if got, refresh := a.Cached("a1", longer, defaults, nil); got.PolicyState != tc.wantState || got.Policy != first.Policy || !refresh {
				t.Errorf("after the panic: got %s %p refresh %v, want %s %p true", got.PolicyState, got.Policy, refresh, tc.wantState, first.Policy)
			}
			if n, want := a.cachedPolicies(), map[bool]int{false: 0, true: 1}[tc.before != nil]; n != want {
				t.Errorf("entries: got %d, want %d", n, want)
			}
			an := a.Analyze("a1", longer, defaults, nil)
			if want := Optimize(Project(longer, defaults, nil, cfg), cfg.Horizon, cfg); an.Policy == nil || !reflect.DeepEqual(*an.Policy, want) {
				t.Errorf("next Analyze: got %+v, want %+v", an.Policy, want)
			}
			if got, _ := a.Cached("a1", longer, defaults, nil); got.PolicyState != PolicyCurrent || got.Policy != an.Policy {
				t.Errorf("then: got %s %p, want current %p", got.PolicyState, got.Policy, an.Policy)
			}
		})
	}
}

// TestAnalyzerCachedConcurrent peeks and analyzes a fleet whose histories
// change, from several goroutines at once: every peek is one of the policies
// of the agent's histories, labelled as its inputs say, and after the last
// Analyze every peek is current.
func TestAnalyzerCachedConcurrent(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Runs = 20
	const agents, versions, workers = 12, 3, 6
	hs := make([][][]governor.DriftPoint, agents)
	want := make([][]Policy, agents)
	for i := range agents {
		for v := range versions {
			h := fleetHistory(i + 100*v)
			hs[i] = append(hs[i], h)
			want[i] = append(want[i], Optimize(Project(h, defaults, nil, cfg), cfg.Horizon, cfg))
		}
	}
	a := NewAnalyzer(cfg, true)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for k := range agents * versions * 2 {
				i, v := (k+w)%agents, (k/agents+w)%versions
				id := fmt.Sprint("a", i)
				if (k+w)%2 == 0 {
					a.Analyze(id, hs[i][v], defaults, nil)
					continue
				}
				got, refresh := a.Cached(id, hs[i][v], defaults, nil)
				switch got.PolicyState {
				case PolicyPending:
					if got.Policy != nil || !refresh {
						t.Errorf("agent %d: pending with policy %p, refresh %v", i, got.Policy, refresh)
					}
				case PolicyCurrent:
					if refresh || !reflect.DeepEqual(*got.Policy, want[i][v]) {
						t.Errorf("agent %d version %d: current %+v, want %+v", i, v, *got.Policy, want[i][v])
					}
				case PolicyStale:
					if !refresh || !slices.ContainsFunc(want[i], func(p Policy) bool { return reflect.DeepEqual(p, *got.Policy) }) {
						t.Errorf("agent %d: stale %+v, want one of its policies", i, *got.Policy)
					}
				default:
					t.Errorf("agent %d: got state %q", i, got.PolicyState)
				}
			}
		})
	}
	wg.Wait()
	for i := range agents {
		id := fmt.Sprint("a", i)
		a.Analyze(id, hs[i][0], defaults, nil)
		if got, _ := a.Cached(id, hs[i][0], defaults, nil); got.PolicyState != PolicyCurrent || !reflect.DeepEqual(*got.Policy, want[i][0]) {
			t.Errorf("agent %d after Analyze: got %s %+v, want current %+v", i, got.PolicyState, got.Policy, want[i][0])
		}
	}
}
