package trajectory

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vigilhq/vigil/governor"
)

// standDown is the drift below which a plan stands down: midway between the
// low and moderate thresholds (0.15 with the defaults).
func standDown(thr governor.Thresholds) float64 { return (thr.Low + thr.Moderate) / 2 }

// conditions returns the conditional clauses of strategy s: its triggers,
// when to re-plan, and when to stand down (if drift falls below standDown
// within lookahead actions).
func conditions(s Strategy, thr governor.Thresholds, lookahead int) []Condition {
	calm := Condition{
		If:   fmt.Sprintf("drift < %s within %d actions", num(standDown(thr)), lookahead),
		Then: "stand down",
	}
	switch s {
	case NoOp:
		return []Condition{
			{If: "drift >= " + num(thr.Moderate), Then: "re-run the optimizer"},
		}
	case EarlyAdvisory:
		return []Condition{
			{If: "drift >= " + num(thr.High) + " after the advisory", Then: "re-run the optimizer"},
			calm,
		}
	case WaitAndThrottle:
		return []Condition{
			{If: "drift >= " + num(thr.High), Then: "throttle"},
			{If: "drift >= " + num(thr.Critical) + " while throttled", Then: "re-run the optimizer"},
			{If: calm.If, Then: "lift the throttle and stand down"},
		}
	case ImmediateEscalate:
		return []Condition{
			{If: "a reviewer clears the agent", Then: "resume it and re-run the optimizer"},
		}
	case Graduated:
		return []Condition{
			{If: "drift >= " + num(thr.Moderate), Then: "issue an advisory (once)"},
			{If: "drift >= " + num(thr.High), Then: "throttle"},
			{If: "drift >= " + num(thr.Critical), Then: "escalate"},
			{If: calm.If, Then: "lift any throttle and stand down"},
		}
	}
	return nil
}

// decisionTree renders p as text: the strategy and its cost, the branch taken
// at each step, the conditions, the noise-free schedule and the comparison.
func decisionTree(p *Policy, thr governor.Thresholds, cfg Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: expected cost %.2f (interventions %.2f, violations %.2f), confidence %.2f\n",
		p.Strategy, p.Expected.Total, p.Expected.Intervention, p.Expected.Violation, p.Confidence)
	c := cfg.Costs
	type branch struct{ when, do string }
	var branches []branch
	switch p.Strategy {
	case NoOp:
		branches = []branch{{"always", "no action"}}
	case EarlyAdvisory:
		branches = []branch{
			{"now", fmt.Sprintf("advisory [cost %s]", money(c.Advisory))},
			{"afterwards", "no action"},
		}
	case WaitAndThrottle:
		branches = []branch{
			{"drift >= " + num(thr.High) + " (high)", fmt.Sprintf("throttle until the horizon ends [cost %s per step]", money(c.ThrottlePerStep))},
			{"otherwise", "no action"},
		}
	case ImmediateEscalate:
		branches = []branch{{"now", fmt.Sprintf("escalate: out of service until reviewed [cost %s]", money(c.Escalate))}}
	case Graduated:
		branches = []branch{
			{"drift >= " + num(thr.Critical) + " (critical)", fmt.Sprintf("escalate [cost %s]", money(c.Escalate))},
			{"drift >= " + num(thr.High) + " (high)", fmt.Sprintf("throttle until the horizon ends [cost %s per step]", money(c.ThrottlePerStep))},
			{"drift >= " + num(thr.Moderate) + " (moderate)", fmt.Sprintf("advisory, once [cost %s]", money(c.Advisory))},
			{"otherwise", "no action"},
		}
	}
	b.WriteString("at each step:\n")
	for i, br := range branches {
		lead := "├─ "
		if i == len(branches)-1 {
			lead = "└─ "
		}
		fmt.Fprintf(&b, "%s%s → %s\n", lead, br.when, br.do)
	}
	for _, cond := range p.Conditions {
		fmt.Fprintf(&b, "if %s → %s\n", cond.If, cond.Then)
	}
	if len(p.Schedule) == 0 {
		b.WriteString("expected path: no intervention\n")
	} else {
		parts := make([]string, len(p.Schedule))
		for i, s := range p.Schedule {
			parts[i] = fmt.Sprintf("%s at step %d", s.Intervention, s.Step)
		}
		fmt.Fprintf(&b, "expected path: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "versus %s: %.2f, savings %.1f%%", ImmediateEscalate, p.Comparison.NaiveCost, p.Comparison.SavingsPercent)
	return b.String()
}

// num formats a threshold with at most three significant digits and no
// exponent.
func num(x float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	if err != nil {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// money formats a configured cost exactly.
func money(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
