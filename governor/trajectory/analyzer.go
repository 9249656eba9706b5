package trajectory

import (
	"cmp"
	"slices"
	"sync"

	"github.com/vigilhq/vigil/governor"
)

// Analysis is one agent's trajectory with the recommendation and, with the
// optimizer on, the policy and its state.
type Analysis struct {
	AgentID    string
	Trajectory Trajectory
	// Recommendation is what to do now: the optimizer's with a policy, the
	// thresholds' without (with the optimizer off, or a pending policy).
	Recommendation Recommendation
	// Policy is the optimizer's answer; nil when the Analyzer's optimizer is
	// off or the policy is pending. It is shared with the Analyzer's cache
	// and with every other Analysis of the same inputs: treat it as
	// read-only.
	Policy *Policy
	// PolicyState says what Policy was computed from: PolicyCurrent from
	// the trajectory's own inputs (always, from Analyze), PolicyStale from
	// the agent's earlier inputs, PolicyPending none yet (Cached only).
	// Empty when the optimizer is off.
	PolicyState PolicyState
}

// PolicyState says whether an Analysis's policy was computed from the
// agent's current inputs.
type PolicyState string

// The policy states.
const (
	// PolicyCurrent: the policy was computed from the agent's current
	// inputs; it is what Analyze returns.
	PolicyCurrent PolicyState = "current"
	// PolicyStale: the agent's most recent policy, computed from earlier
	// inputs (its drift or thresholds have changed since).
	PolicyStale PolicyState = "stale"
	// PolicyPending: no policy has been computed for the agent yet (or it
	// was forgotten); the recommendation is the thresholds'.
	PolicyPending PolicyState = "pending"
)

// MaxCachedPolicies bounds an Analyzer's cache: when a new agent would
// exceed it, the least recently asked-for quarter of the agents is
// forgotten. An agent's entry holds one completed policy (about 1.1 KiB),
// and a second one while its replacement is being computed, so a full cache
// holds about 75 MiB, next to the governor's own state for as many agents
// (their drift histories alone take up to 56 KiB each).
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
// Each agent's entry also keeps its most recently completed policy after
// the key has changed, until a policy for a newer key completes: Cached
// serves it, labelled PolicyStale, without optimizing or waiting, to a
// caller that must answer at once (the fleet view) and refreshes the
// policies in the background with Analyze. Analyze itself always returns
// the current policy.
//
// The result depends only on the inputs and Config.Seed, never on which
// call computed the cached policy, so callers may analyze a fleet on as
// many goroutines as they like and get the same answers.
type Analyzer struct {
	cfg       Config
	optimizer bool
	limit     int                                  // MaxCachedPolicies; smaller in tests
	optimize  func(Trajectory, int, Config) Policy // Optimize; counted or failed in tests

	mu      sync.Mutex
	entries map[string]*entry // by agent id
	tick    uint64            // clock for the eviction order and the computations' order
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

// entry is one agent's cache entry: the policy for the latest key asked
// for, which may be in progress, and the most recently completed policy,
// whatever its key. Guarded by Analyzer.mu.
type entry struct {
	used uint64       // tick of the last ask, for the eviction order
	cur  *computation // the latest computation started; nil after it panicked
	done *computation // the latest-started computation that completed; nil before one did
}

// computation is one optimization, in progress until ready is closed;
// policy is set before that, and stays nil if Optimize panicked. started
// orders the computations of an agent.
type computation struct {
	key     policyKey
	started uint64
	ready   chan struct{}
	policy  *Policy
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
		optimize:  Optimize,
		entries:   map[string]*entry{},
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
// trajectory (Project), with the optimizer on the current policy (Optimize
// over Config.Horizon, cached; PolicyCurrent), and the recommendation
// (Recommend). It optimizes, or waits for a concurrent call that does, when
// the cache holds no policy for these inputs. The history and past are not
// retained.
func (a *Analyzer) Analyze(agentID string, history []governor.DriftPoint, thr governor.Thresholds, past []Past) Analysis {
	t := Project(history, thr, past, a.cfg)
	out := Analysis{AgentID: agentID, Trajectory: t}
	if a.optimizer {
		out.Policy, out.PolicyState = a.policy(agentID, keyOf(t), t), PolicyCurrent
	}
	out.Recommendation = Recommend(t, out.Policy)
	return out
}

// Cached returns the agent's analysis with whatever policy the cache holds,
// never optimizing and never waiting for an optimization in progress: the
// trajectory is projected as by Analyze (which is cheap), and the policy is
//   - the current one (PolicyCurrent) when it is cached and complete; the
//     analysis is then the one Analyze returns;
//   - else the agent's most recently completed policy, computed from
//     earlier inputs (PolicyStale), with Recommend's answer for it: the
//     first step of a plan made for the earlier drift;
//   - else none (PolicyPending), with the thresholds' recommendation
//     (Recommend with no policy, as with the optimizer off).
//
// refresh reports whether the policy is not current, that is whether
// Analyze would optimize (or wait for an optimization in progress) for
// these inputs. With the optimizer off the analysis is Analyze's and
// refresh is false. Cached counts as an ask for the eviction order but
// adds nothing to the cache.
func (a *Analyzer) Cached(agentID string, history []governor.DriftPoint, thr governor.Thresholds, past []Past) (an Analysis, refresh bool) {
	t := Project(history, thr, past, a.cfg)
	out := Analysis{AgentID: agentID, Trajectory: t}
	if a.optimizer {
		out.Policy, out.PolicyState = a.cached(agentID, keyOf(t))
		refresh = out.PolicyState != PolicyCurrent
	}
	out.Recommendation = Recommend(t, out.Policy)
	return out, refresh
}

// keyOf returns the policy key of a trajectory.
func keyOf(t Trajectory) policyKey {
	return policyKey{current: t.Current, velocity: t.Velocity, sigma: t.Sigma, thr: t.Thresholds}
}

// cached returns the agent's completed policy and its state for key.
func (a *Analyzer) cached(agentID string, key policyKey) (*Policy, PolicyState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.entries[agentID]
	if !ok {
		return nil, PolicyPending
	}
	a.tick++
	e.used = a.tick
	switch {
	case e.done == nil:
		return nil, PolicyPending
	case e.done.key == key:
		return e.done.policy, PolicyCurrent
	}
	return e.done.policy, PolicyStale
}

// policy returns the agent's cached policy for key, computing it from t
// when the cache has none (or an older one).
func (a *Analyzer) policy(agentID string, key policyKey, t Trajectory) *Policy {
	a.mu.Lock()
	a.tick++
	e, ok := a.entries[agentID]
	if !ok {
		if len(a.entries) >= a.limit {
			a.evict()
		}
		e = &entry{}
		a.entries[agentID] = e
	}
	e.used = a.tick
	if d := e.done; d != nil && d.key == key {
		a.mu.Unlock()
		return d.policy
	}
	if c := e.cur; c != nil && c.key == key {
		a.mu.Unlock()
		// Wait for the call that computes it, then take it; if that
		// computation failed, compute it here (without caching it).
		<-c.ready
		if c.policy == nil {
			p := a.optimize(t, a.cfg.Horizon, a.cfg)
			return &p
		}
		return c.policy
	}
	c := &computation{key: key, started: a.tick, ready: make(chan struct{})}
	e.cur = c
	a.mu.Unlock()

	defer func() {
		a.mu.Lock()
		switch {
		case c.policy != nil:
			// Complete: the agent's latest policy, unless one started
			// later completed first (then this one is older news).
			if e.done == nil || e.done.started < c.started {
				e.done = c
			}
		case e.cur == c:
			// Optimize panicked: let the next call try again, and keep
			// the entry only for the policy it already has.
			e.cur = nil
			if e.done == nil && a.entries[agentID] == e {
				delete(a.entries, agentID)
			}
		}
		a.mu.Unlock()
		close(c.ready)
	}()
	p := a.optimize(t, a.cfg.Horizon, a.cfg)
	c.policy = &p
	return c.policy
}

// evict forgets the least recently used quarter of the entries (at least
// one), their stale policies with them. Called with a.mu held. An entry
// being computed may go: its callers still get their policy, it is just
// not kept.
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
