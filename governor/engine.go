package governor

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Engine evaluates actions. It holds the compiled contracts, the
// constitutional rules, the directive overlays and every agent's state. It is
// safe for concurrent use: contracts, rules and overlays are immutable
// snapshots swapped atomically, and each agent's mutable state has its own
// lock, so evaluations of different agents never wait on each other.
type Engine struct {
	cfg          Config
	clock        func() time.Time
	deliberators []Deliberator
	noTrace      bool

	regMu    sync.Mutex // serializes writers of agents
	agents   atomic.Pointer[map[string]*agent]
	rules    atomic.Pointer[ruleSet]
	overlays atomic.Pointer[Overlays]
}

// Option configures an Engine beyond Config (rare knobs).
type Option func(*Engine)

// WithClock replaces time.Now (tests, simulation).
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.clock = now } }

// WithDeliberators adds custom tier 3 deliberators, consulted in order before
// the built-in tier 3 rules.
func WithDeliberators(d ...Deliberator) Option {
	return func(e *Engine) { e.deliberators = append(e.deliberators, d...) }
}

// WithoutTrace stops recording pipeline steps: decisions carry the verdict,
// scores and state but an empty Pipeline. For a Vigil running without its
// ledger (runtime.enable_ledger: false), where no trace would be kept.
func WithoutTrace() Option { return func(e *Engine) { e.noTrace = true } }

// Deliberator is a custom tier 3 reviewer. It returns decided=false to leave
// the decision to the next deliberator or the built-in rules.
type Deliberator interface {
	Deliberate(DeliberateArgs) (v Verdict, reasoning string, decided bool)
}

// DeliberateArgs is what a Deliberator sees. Fields may be added.
type DeliberateArgs struct {
	AgentID       string
	Action        *Action
	UCS           float64
	Trust         float64
	Reversibility Reversibility
	Scores        []DimensionScore
}

type ruleSet struct {
	rules    []Rule
	compiled []*Invariant
}

// New returns an Engine with cfg (see DefaultConfig).
func New(cfg Config, opts ...Option) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Weights = maps.Clone(cfg.Weights)
	e := &Engine{cfg: cfg, clock: time.Now}
	for _, o := range opts {
		o(e)
	}
	empty := map[string]*agent{}
	e.agents.Store(&empty)
	e.rules.Store(&ruleSet{})
	e.overlays.Store(&Overlays{})
	return e, nil
}

// Config returns the engine's constants.
func (e *Engine) Config() Config {
	c := e.cfg
	c.Weights = maps.Clone(c.Weights)
	return c
}

// SetContract validates, compiles and installs an agent's contract. A new
// agent starts with trust at the baseline and a fingerprint seeded from its
// archetype's prior; an existing agent keeps its state.
func (e *Engine) SetContract(c Contract) error {
	cc, err := compileContract(c)
	if err != nil {
		return err
	}
	e.regMu.Lock()
	defer e.regMu.Unlock()
	cur := *e.agents.Load()
	if a, ok := cur[c.AgentID]; ok {
		a.mu.Lock()
		a.contract = cc
		a.mu.Unlock()
		return nil
	}
	next := maps.Clone(cur)
	next[c.AgentID] = newAgent(&e.cfg, cc)
	e.agents.Store(&next)
	return nil
}

// RemoveAgent forgets an agent and its state. It reports whether it existed.
func (e *Engine) RemoveAgent(id string) bool {
	e.regMu.Lock()
	defer e.regMu.Unlock()
	cur := *e.agents.Load()
	if _, ok := cur[id]; !ok {
		return false
	}
	next := maps.Clone(cur)
	delete(next, id)
	e.agents.Store(&next)
	return true
}

// Contract returns an agent's contract.
func (e *Engine) Contract(id string) (Contract, bool) {
	a := e.agent(id)
	if a == nil {
		return Contract{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return cloneContract(a.contract.spec), true
}

// Agents returns the ids of the registered agents, sorted.
func (e *Engine) Agents() []string {
	return slices.Sorted(maps.Keys(*e.agents.Load()))
}

func (e *Engine) agent(id string) *agent { return (*e.agents.Load())[id] }

// SetRules compiles and installs the constitutional rules, replacing the
// previous set. Names must be unique and non-empty.
func (e *Engine) SetRules(rules []Rule) error {
	rs := &ruleSet{rules: slices.Clone(rules)}
	seen := map[string]bool{}
	for i, r := range rules {
		field := fmt.Sprintf("rules[%d]", i)
		if r.Name == "" {
			return &FieldError{Field: field + ".name", Msg: "rule name is required"}
		}
		if seen[r.Name] {
			return &FieldError{Field: field + ".name", Msg: fmt.Sprintf("duplicate rule name %q", r.Name)}
		}
		seen[r.Name] = true
		inv, err := CompileInvariant(r.Name, r.Expr, r.Message)
		if err != nil {
			return &FieldError{Field: field + ".expr", Msg: err.Error()}
		}
		rs.compiled = append(rs.compiled, inv)
	}
	e.rules.Store(rs)
	return nil
}

// Rules returns the constitutional rules in force.
func (e *Engine) Rules() []Rule { return slices.Clone(e.rules.Load().rules) }

// SetOverlays installs a new set of directive overlays; the next evaluation
// of each agent binds to it.
func (e *Engine) SetOverlays(o Overlays) {
	cp := maps.Clone(o)
	if cp == nil {
		cp = Overlays{}
	}
	e.overlays.Store(&cp)
}

// Overlay returns the overlay bound to an agent (nil when none).
func (e *Engine) Overlay(agentID string) *Overlay { return (*e.overlays.Load())[agentID] }

// CallOutcome is how a forwarded call ended.
type CallOutcome uint8

// Call outcomes.
const (
	CallCompleted CallOutcome = iota + 1
	CallInterrupted
	// CallFailed is a call the tool did not answer (unreachable, failing,
	// or its circuit breaker open): it leaves trust unchanged and is
	// counted in AgentStatus.UpstreamFailures.
	CallFailed
	// CallAbandoned is a call its caller gave up (the agent went away
	// before the answer ended): it leaves trust unchanged.
	CallAbandoned
)

// CallStarted counts a forwarded call of the agent as in flight (the
// max_concurrent limit).
func (e *Engine) CallStarted(agentID string) error {
	a := e.agent(agentID)
	if a == nil {
		return fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	a.inflight.Add(1)
	return nil
}

// CallFinished ends an in-flight call and feeds trust: a completed call
// raises it, an interrupted one lowers it, a failed or abandoned one leaves
// it.
func (e *Engine) CallFinished(agentID string, outcome CallOutcome) error {
	a := e.agent(agentID)
	if a == nil {
		return fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	if a.inflight.Add(-1) < 0 {
		a.inflight.Store(0)
	}
	if outcome == CallFailed {
		a.upstreamFailures.Add(1)
	}
	if outcome != CallCompleted && outcome != CallInterrupted {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := e.clock()
	switch outcome {
	case CallCompleted:
		a.st.adjustTrust(&e.cfg, now, e.cfg.TrustCompletedDelta, "call", "call completed")
	case CallInterrupted:
		a.st.adjustTrust(&e.cfg, now, e.cfg.TrustInterruptDelta, "call", "call interrupted")
	}
	return nil
}

// RevokeApproval withdraws the grant of the action whose digest is given,
// if there is one: a call held on an approval and then forwarded has used
// it. It reports whether a grant was withdrawn.
func (e *Engine) RevokeApproval(agentID, digest string) (bool, error) {
	a := e.agent(agentID)
	if a == nil {
		return false, fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.st.Approvals[digest]
	delete(a.st.Approvals, digest)
	return ok, nil
}

// GrantApproval lets one action whose digest (ActionDigest) matches pass
// human_override once, until expires.
func (e *Engine) GrantApproval(agentID, digest string, expires time.Time) error {
	a := e.agent(agentID)
	if a == nil {
		return fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.st.Approvals == nil {
		a.st.Approvals = map[string]time.Time{}
	}
	a.st.Approvals[digest] = expires
	return nil
}

// AcknowledgeAlerts marks every drift alert of the agent as acknowledged.
func (e *Engine) AcknowledgeAlerts(agentID string) error {
	a := e.agent(agentID)
	if a == nil {
		return fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.st.Alerts.buf {
		a.st.Alerts.buf[i].Acknowledged = true
	}
	return nil
}

// DriftHistory returns the agent's drift recomputations, oldest first.
func (e *Engine) DriftHistory(agentID string) ([]DriftPoint, error) {
	a := e.agent(agentID)
	if a == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st.DriftHistory.items(), nil
}

// TrustEvents returns the agent's trust events, oldest first.
func (e *Engine) TrustEvents(agentID string) ([]TrustEvent, error) {
	a := e.agent(agentID)
	if a == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.st.TrustEvents.items(), nil
}

// Status returns a read-only view of the agent's state.
func (e *Engine) Status(agentID string) (AgentStatus, error) {
	a := e.agent(agentID)
	if a == nil {
		return AgentStatus{}, fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	ov := e.Overlay(agentID)
	a.mu.Lock()
	defer a.mu.Unlock()
	st := &a.st
	s := AgentStatus{
		AgentID:               agentID,
		Contract:              cloneContract(a.contract.spec),
		Trust:                 st.Trust,
		TrustDirection:        st.trustDirection(&e.cfg),
		TrustVelocity:         st.trustVelocity(),
		Violations:            st.Violations,
		Observations:          st.Observations,
		FingerprintConfidence: st.fingerprintConfidence(&e.cfg),
		Fingerprint:           a.fingerprint(&e.cfg),
		Drift:                 st.Drift,
		DriftConfidence:       st.DriftConfidence,
		Thresholds:            e.cfg.Thresholds.Scale(ov.thresholdFactor()),
		InFlight:              int(a.inflight.Load()),
		UpstreamFailures:      a.upstreamFailures.Load(),
		LastEvaluation:        st.LastEvaluation,
		Alerts:                st.Alerts.items(),
	}
	s.Severity = severity(st.Drift.Overall, s.Thresholds)
	if a.contract.prior != nil {
		s.Prior = a.contract.prior.Name
	}
	if ov != nil {
		s.Quarantined, s.Suspended, s.Directives = ov.Quarantined, ov.Suspended, slices.Clone(ov.Directives)
	}
	return s, nil
}

// newActionID returns a random action id ("act_" and 16 hex digits).
func newActionID() string {
	return "act_" + strconv.FormatUint(rand.Uint64()|1<<63, 16)
}
