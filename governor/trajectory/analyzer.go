package trajectory

import (
	"cmp"
	"slices"
	"sync"

	"github.com/vigilhq/vigil/governor"
)

// Analysis is one agent's trajectory with the recommendation and, with the
// optimizer on, the policy.
type Analysis struct {
	AgentID    string
	Trajectory Trajectory
	// Recommendation is what to do now: the optimizer's with a policy, the
	// thresholds' without.
	Recommendation Recommendation
	// Policy is the optimizer's answer; nil when the Analyzer's optimizer is
	// off. It is shared with the Analyzer's cache and with every other
	// Analysis of the same inputs: treat it as read-only.
	Policy *Policy
}

// MaxCachedPolicies bounds an Analyzer's cache: when a new policy would
// exceed it, the least recently asked-for quarter of the agents is
// forgotten. A cached policy takes about 1.1 KiB, so a full cache holds
// about 75 MiB, next to the governor's own state for as many agents (their
// drift histories alone take up to 56 KiB each).
const MaxCachedPolicies = 1 << 16

// Analyzer computes analyses and caches each agent's policy, so that a fleet
// view or a periodic check costs a projection, not an optimization, for
// agents whose drift did not change. Create it with NewAnalyzer; it is safe
// for concurrent use and its Config and optimizer switch never change.
//
// Analyze projects on every call: Project is linear in the history and
// takes microseconds. The policy is what costs (Optimize: about 2 ms with
// the defaults); it is cached per agent id, keyed by the values of the
// trajectory it is computed from: the current drift, the velocity, sigma
// and the thresholds (the Config and the optimizer switch are the
// Analyzer's own). Equal values give an equal policy whatever the history
// behind them, so the key is exact: a new drift point that changes nothing
// keeps the policy, and a rewritten history (a restored snapshot) that
// changes anything replaces it. Past interventions only place markers, so
// they are not part of the key. Concurrent calls for the same agent and key
// wait for one optimization instead of running it twice. The cache holds at
// most MaxCachedPolicies agents; beyond that the least recently asked-for
// are forgotten.
//
// The result depends only on the inputs and Config.Seed, never on which
// call computed the cached policy, so callers may analyze a fleet on as
// many goroutines as they like and get the same answers.
type Analyzer struct {
	cfg       Config
	optimizer bool
	limit     int // MaxCachedPolicies; smaller in tests

	mu      sync.Mutex
	entries map[string]*cached // by agent id
	tick    uint64             // access clock for the eviction order
}

// policyKey is what an agent's policy depends on besides the Analyzer's
// Config: the fields of the trajectory that Optimize reads (it reads the
// overall current drift and velocity; the key holds every distribution's,
// so that it stays exact should Optimize read more).
type policyKey struct {
	current  governor.DriftScores
	velocity governor.DriftScores
	sigma    float64
	thr      governor.Thresholds
}

// cached is one agent's policy, or its computation in progress: ready is
// closed once policy is set.
type cached struct {
	key    policyKey
	used   uint64
	ready  chan struct{}
	policy *Policy
}

// NewAnalyzer returns an Analyzer with cfg (each field that Config.Validate
// would reject replaced by its default) and the optimizer on or off: with
// it off, an Analysis has no Policy and its recommendation comes from the
// thresholds, and nothing is cached.
func NewAnalyzer(cfg Config, optimizer bool) *Analyzer {
	return &Analyzer{
		cfg:       cfg.normalized(),
		optimizer: optimizer,
		limit:     MaxCachedPolicies,
		entries:   map[string]*cached{},
	}
}

// Optimizer reports whether the policy optimizer is on.
func (a *Analyzer) Optimizer() bool { return a.optimizer }

// Config returns the Analyzer's configuration, with invalid fields replaced
// by their defaults.
func (a *Analyzer) Config() Config { return a.cfg }

// Analyze returns the agent's analysis from its drift history (oldest first,
// as governor.Engine.DriftHistory returns it), its effective thresholds
// (governor.AgentStatus.Thresholds) and its past interventions: the
// trajectory (Project), with the optimizer on the policy (Optimize over
// Config.Horizon, cached), and the recommendation (Recommend). The history
// and past are not retained.
func (a *Analyzer) Analyze(agentID string, history []governor.DriftPoint, thr governor.Thresholds, past []Past) Analysis {
	t := Project(history, thr, past, a.cfg)
	out := Analysis{AgentID: agentID, Trajectory: t}
	if a.optimizer {
		key := policyKey{current: t.Current, velocity: t.Velocity, sigma: t.Sigma, thr: t.Thresholds}
		out.Policy = a.policy(agentID, key, t)
	}
	out.Recommendation = Recommend(t, out.Policy)
	return out
}

// policy returns the agent's cached policy for key, computing it from t
// when the cache has none (or an older one).
func (a *Analyzer) policy(agentID string, key policyKey, t Trajectory) *Policy {
	a.mu.Lock()
	a.tick++
	if e, ok := a.entries[agentID]; ok && e.key == key {
		e.used = a.tick
		a.mu.Unlock()
		// Wait (only while another call computes it), then take it; if
		// that computation failed, compute it here.
		<-e.ready
		if e.policy == nil {
			p := Optimize(t, a.cfg.Horizon, a.cfg)
			return &p
		}
		return e.policy
	}
	e := &cached{key: key, used: a.tick, ready: make(chan struct{})}
	if _, ok := a.entries[agentID]; !ok && len(a.entries) >= a.limit {
		a.evict()
	}
	a.entries[agentID] = e
	a.mu.Unlock()

	defer func() {
		if e.policy == nil { // Optimize panicked: let the next call try again
			a.mu.Lock()
			if a.entries[agentID] == e {
				delete(a.entries, agentID)
			}
			a.mu.Unlock()
		}
		close(e.ready)
	}()
	p := Optimize(t, a.cfg.Horizon, a.cfg)
	e.policy = &p
	return e.policy
}

// evict forgets the least recently used quarter of the entries (at least
// one). Called with a.mu held. An entry being computed may go: its callers
// still get their policy, it is just not kept.
func (a *Analyzer) evict() {
	type use struct {
		id   string
		used uint64
	}
	all := make([]use, 0, len(a.entries))
	for id, e := range a.entries {
		all = append(all, use{id, e.used})
	}
	slices.SortFunc(all, func(x, y use) int { return cmp.Compare(x.used, y.used) })
	for _, u := range all[:max(1, len(all)/4)] {
		delete(a.entries, u.id)
	}
}
