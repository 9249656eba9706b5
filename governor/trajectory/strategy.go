package trajectory

import (
	"errors"
	"fmt"
	"strings"
)

// Intervention is what the governor can do about a drifting agent.
type Intervention string

// The interventions, mildest first.
const (
	None     Intervention = "none"
	Advisory Intervention = "advisory"
	Throttle Intervention = "throttle"
	Escalate Intervention = "escalate"
)

// Strategy is a rule for when to intervene, simulated by the optimizer.
type Strategy string

// The strategies of GOVERNOR.md §10, in Strategies() order.
const (
	// NoOp never intervenes.
	NoOp Strategy = "no_op"
	// EarlyAdvisory issues an advisory now (step 0) and nothing else.
	EarlyAdvisory Strategy = "early_advisory"
	// WaitAndThrottle throttles from the first step whose drift is at or
	// above the high threshold; the throttle stays active.
	WaitAndThrottle Strategy = "wait_and_throttle"
	// ImmediateEscalate escalates now: the naive baseline.
	ImmediateEscalate Strategy = "immediate_escalate"
	// Graduated issues an advisory at moderate (once), throttles at high and
	// escalates at critical.
	Graduated Strategy = "graduated"
)

// Strategies returns every strategy in a fixed order (a new slice each call);
// the optimizer breaks ties in favour of the earlier one.
func Strategies() []Strategy {
	return []Strategy{NoOp, EarlyAdvisory, WaitAndThrottle, ImmediateEscalate, Graduated}
}

// ErrUnknownStrategy is wrapped by ParseStrategy for a name that is not a
// strategy.
var ErrUnknownStrategy = errors.New("trajectory: unknown strategy")

// ParseStrategy returns the strategy named exactly s (lower case, as in
// Strategies). The error wraps ErrUnknownStrategy and lists the valid names.
func ParseStrategy(s string) (Strategy, error) {
	all := Strategies()
	for _, st := range all {
		if string(st) == s {
			return st, nil
		}
	}
	names := make([]string, len(all))
	for i, st := range all {
		names[i] = string(st)
	}
	return "", fmt.Errorf("%w %q (valid: %s)", ErrUnknownStrategy, s, strings.Join(names, ", "))
}

// RiskLevel is how far the overall drift is projected to go within the
// lookahead, against the agent's thresholds.
type RiskLevel string

// The risk levels, lowest first.
const (
	RiskLow      RiskLevel = "low"
	RiskModerate RiskLevel = "moderate"
	RiskHigh     RiskLevel = "high"
	RiskCritical RiskLevel = "critical"
)

// ThresholdRecommendation maps a risk level to the intervention recommended
// without the optimizer: low → none, moderate → advisory, high → throttle,
// critical → escalate. An unknown level maps to none.
func ThresholdRecommendation(r RiskLevel) Intervention {
	switch r {
	case RiskModerate:
		return Advisory
	case RiskHigh:
		return Throttle
	case RiskCritical:
		return Escalate
	}
	return None
}

// Recommendation sources.
const (
	SourceThreshold = "threshold"
	SourceOptimizer = "optimizer"
)

// Recommendation is the intervention to apply now and where it comes from:
// SourceThreshold or SourceOptimizer.
type Recommendation struct {
	Intervention Intervention
	Source       string
}

// Recommend returns the recommendation for the trajectory. With a policy it
// is the optimizer's: the intervention its schedule issues at step 0 (now),
// none when the cheapest strategy does nothing now. Without a policy (nil) it
// is ThresholdRecommendation of the trajectory's risk level.
func Recommend(t Trajectory, p *Policy) Recommendation {
	if p == nil {
		return Recommendation{Intervention: ThresholdRecommendation(t.Risk), Source: SourceThreshold}
	}
	iv := None
	for _, s := range p.Schedule {
		if s.Step == 0 && severity(s.Intervention) > severity(iv) {
			iv = s.Intervention
		}
	}
	return Recommendation{Intervention: iv, Source: SourceOptimizer}
}

// severity orders interventions: none 0 … escalate 3.
func severity(i Intervention) int {
	switch i {
	case Advisory:
		return 1
	case Throttle:
		return 2
	case Escalate:
		return 3
	}
	return 0
}
