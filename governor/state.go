package governor

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// agent is one registered agent: its contract and its mutable state. The
// contract pointer and the state are guarded by mu; inflight is atomic so the
// proxy can count calls without taking the lock.
type agent struct {
	mu       sync.Mutex
	contract *compiledContract
	st       agentState
	inflight atomic.Int64
	// upstreamFailures counts the forwarded calls the tool did not answer
	// (CallFailed) since the process started.
	upstreamFailures atomic.Int64
}

// observation is one evaluated action as the fingerprint sees it.
type observation struct {
	Type    string    `json:"type"`
	Target  string    `json:"target"` // target key (category or normalized target)
	Hour    int       `json:"hour"`
	Outcome string    `json:"outcome"`
	Time    time.Time `json:"time"`
	Terms   []string  `json:"terms,omitempty"` // anchor terms in the instruction
}

// termState is the semantic grounding of one anchor term.
type termState struct {
	Anchored    map[string]float64 `json:"anchored"` // action type counts of the first occurrences
	AnchoredN   int                `json:"anchored_n"`
	Occurrences int                `json:"occurrences"`
	Drift       float64            `json:"drift"`
}

type typeStat struct {
	Total  int `json:"total"`
	Denied int `json:"denied"`
}

type deniedAction struct {
	Digest   string `json:"digest"`
	ActionID string `json:"action_id"`
}

type prevDecision struct {
	ActionID    string  `json:"action_id"`
	Verdict     Verdict `json:"verdict"`
	TrustBefore float64 `json:"trust_before"`
	TrustAfter  float64 `json:"trust_after"`
}

// agentState is everything the governor remembers about one agent. It is
// guarded by agent.mu.
type agentState struct {
	Trust          float64          `json:"trust"`
	Violations     int              `json:"violations"`
	LastEvaluation time.Time        `json:"last_evaluation"`
	TrustEvents    ring[TrustEvent] `json:"-"`
	TrustSeries    ring[float64]    `json:"-"`
	// direction caches trustDirection; "" means not computed since the
	// last trust event.
	direction string

	// Fingerprint: whole-history counts and the window.
	Observations     int                   `json:"observations"`
	FirstObservation time.Time             `json:"first_observation"`
	Actions          map[string]float64    `json:"actions"`
	Targets          map[string]float64    `json:"targets"`
	Hours            [24]float64           `json:"hours"`
	Outcomes         map[string]float64    `json:"outcomes"`
	Window           ring[observation]     `json:"-"`
	Terms            map[string]*termState `json:"terms"`
	AppliedReAnchors map[string]string     `json:"applied_re_anchors"`

	// Drift.
	Drift           DriftScores      `json:"drift"`
	DriftConfidence float64          `json:"drift_confidence"`
	PeakOverall     float64          `json:"peak_overall"`
	DriftHistory    ring[DriftPoint] `json:"-"`
	Alerts          ring[DriftAlert] `json:"-"`

	// History of decisions.
	Recent     ring[string]         `json:"-"` // recent action types
	TypeStats  map[string]*typeStat `json:"type_stats"`
	Decisions  int                  `json:"decisions"`
	LastOfType map[string]time.Time `json:"last_of_type"`
	RateWindow []time.Time          `json:"rate_window"` // permitted actions of the last minute
	Approvals  map[string]time.Time `json:"approvals"`
	Denied     ring[deniedAction]   `json:"-"`
	Prev       *prevDecision        `json:"prev,omitempty"`
}

func newAgent(cfg *Config, cc *compiledContract) *agent {
	a := &agent{contract: cc}
	a.st = newAgentState(cfg)
	return a
}

func newAgentState(cfg *Config) agentState {
	return agentState{
		Trust:            cfg.TrustBaseline,
		TrustEvents:      newRing[TrustEvent](cfg.TrustEventsKept),
		DriftHistory:     newRing[DriftPoint](cfg.DriftHistoryKept),
		Alerts:           newRing[DriftAlert](cfg.AlertsKept),
		TrustSeries:      newRing[float64](cfg.TrustTrendWindow),
		Actions:          map[string]float64{},
		Targets:          map[string]float64{},
		Outcomes:         map[string]float64{},
		Window:           newRing[observation](cfg.Window),
		Terms:            map[string]*termState{},
		AppliedReAnchors: map[string]string{},
		Recent:           newRing[string](cfg.RecentKept),
		TypeStats:        map[string]*typeStat{},
		LastOfType:       map[string]time.Time{},
		Denied:           newRing[deniedAction](cfg.DeniedDigestsKept),
	}
}

// clampTrust keeps trust within the configured bounds. Trust is rounded to
// 1e-9 so that repeated small steps land on the values a reader expects
// (45 successes from 0.5 reach 0.95 exactly).
func clampTrust(cfg *Config, t float64) float64 {
	t = math.Round(t*1e9) / 1e9
	return min(max(t, cfg.TrustMin), cfg.TrustMax)
}

// adjustTrust changes trust by delta and records a trust event when the
// change is larger than the configured minimum. It returns the new trust.
func (st *agentState) adjustTrust(cfg *Config, now time.Time, delta float64, source, reason string) float64 {
	return st.setTrust(cfg, now, st.Trust+delta, source, reason)
}

func (st *agentState) setTrust(cfg *Config, now time.Time, t float64, source, reason string) float64 {
	before := st.Trust
	st.Trust = clampTrust(cfg, t)
	// Trust moves in steps of 1e-9 (clampTrust); the change is rounded the
	// same way so that a change of exactly TrustEventMin is not an event.
	if math.Round(math.Abs(st.Trust-before)*1e9)/1e9 > cfg.TrustEventMin {
		st.TrustEvents.push(TrustEvent{Time: now, Source: source, Reason: reason, Before: before, After: st.Trust})
		st.direction = ""
	}
	return st.Trust
}

// decayedTrust is the trust after idle decay toward the baseline at now: no
// change when idle for less than TrustDecayMinIdle seconds, never overshooting.
func (st *agentState) decayedTrust(cfg *Config, now time.Time) (trust, idleSeconds float64) {
	if st.LastEvaluation.IsZero() {
		return st.Trust, 0
	}
	idle := now.Sub(st.LastEvaluation).Seconds()
	if idle < cfg.TrustDecayMinIdle {
		return st.Trust, idle
	}
	step := cfg.TrustDecayPerHour * idle / 3600
	switch {
	case st.Trust > cfg.TrustBaseline:
		return clampTrust(cfg, max(st.Trust-step, cfg.TrustBaseline)), idle
	case st.Trust < cfg.TrustBaseline:
		return clampTrust(cfg, min(st.Trust+step, cfg.TrustBaseline)), idle
	}
	return st.Trust, idle
}

// trustDirection classifies the last TrustTrendWindow trust events: stable,
// rising, falling or volatile (GOVERNOR.md section 4).
func (st *agentState) trustDirection(cfg *Config) string {
	if st.direction == "" {
		n := min(st.TrustEvents.len(), cfg.TrustTrendWindow)
		st.direction = classifyTrust(n, func(i int) TrustEvent { return st.TrustEvents.last(i) }, cfg.TrustNegligible)
	}
	return st.direction
}

func trustDirection(events []TrustEvent, window int, negligible float64) string {
	if len(events) > window {
		events = events[len(events)-window:]
	}
	return classifyTrust(len(events), func(i int) TrustEvent { return events[i] }, negligible)
}

// classifyTrust classifies n trust events read through at (order does not
// matter): none or mostly (> 60 %) negligible → stable; ups and downs both
// present with the minority at least 30 % of them → volatile; else rising
// or falling.
func classifyTrust(n int, at func(int) TrustEvent, negligible float64) string {
	var ups, downs, small int
	for i := range n {
		ev := at(i)
		switch d := ev.After - ev.Before; {
		case d >= negligible:
			ups++
		case d <= -negligible:
			downs++
		default:
			small++
		}
	}
	total := ups + downs + small
	if total == 0 || float64(small) > 0.6*float64(total) || ups+downs == 0 {
		return "stable"
	}
	if ups > 0 && downs > 0 && float64(min(ups, downs)) >= 0.3*float64(ups+downs) {
		return "volatile"
	}
	if ups > downs {
		return "rising"
	}
	return "falling"
}

// trustVelocity is the least-squares slope of trust per evaluation over the
// last TrustTrendWindow evaluations.
func (st *agentState) trustVelocity() float64 {
	var buf [64]float64
	ys := buf[:0]
	if st.TrustSeries.len() > len(buf) {
		ys = make([]float64, 0, st.TrustSeries.len())
	}
	for i := range st.TrustSeries.len() {
		ys = append(ys, st.TrustSeries.at(i))
	}
	return slope(ys)
}

// slope is the least-squares slope of ys against 0, 1, 2, ... (0 for fewer
// than two points).
func slope(ys []float64) float64 {
	n := float64(len(ys))
	if n < 2 {
		return 0
	}
	var sx, sy, sxy, sxx float64
	for i, y := range ys {
		x := float64(i)
		sx += x
		sy += y
		sxy += x * y
		sxx += x * x
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// fingerprintConfidence = min(1 - e^(-n/scale), window fill).
func (st *agentState) fingerprintConfidence(cfg *Config) float64 {
	n := float64(st.Observations)
	return min(1-math.Exp(-n/cfg.ConfidenceScale), float64(st.Window.len())/float64(cfg.Window))
}

// pruneRate drops permitted actions older than a minute and returns how many
// remain.
func (st *agentState) pruneRate(now time.Time) int {
	cut := now.Add(-time.Minute)
	i := 0
	for i < len(st.RateWindow) && !st.RateWindow[i].After(cut) {
		i++
	}
	if i > 0 {
		st.RateWindow = append(st.RateWindow[:0], st.RateWindow[i:]...)
	}
	return len(st.RateWindow)
}

// rateCount counts permitted actions within the last minute without
// modifying the state (dry runs).
func (st *agentState) rateCount(now time.Time) int {
	cut := now.Add(-time.Minute)
	n := 0
	for _, t := range st.RateWindow {
		if t.After(cut) {
			n++
		}
	}
	return n
}
