package trajectory

// Cost is an expected cost, split into interventions and violations;
// Total = Intervention + Violation.
type Cost struct {
	Intervention float64
	Violation    float64
	Total        float64
}

// Step is one entry of a schedule: the intervention issued at Step, counted
// in observations from now (0 = now).
type Step struct {
	Step         int
	Intervention Intervention
}

// Condition is a conditional clause of a policy: if If holds, do Then.
type Condition struct {
	If   string
	Then string
}

// Comparison sets the winner against the naive baseline (immediate_escalate).
// SavingsPercent = (NaiveCost − OptimizedCost) / NaiveCost × 100: never
// negative, since the naive baseline is one of the candidates, and 0 when
// NaiveCost is 0.
type Comparison struct {
	OptimizedCost  float64
	NaiveCost      float64
	SavingsPercent float64
}

// Outcome is one strategy's Monte Carlo estimate: its expected cost and the
// standard error of the expected total.
type Outcome struct {
	Strategy Strategy
	Expected Cost
	StdErr   float64
}

// Policy is the optimizer's answer: the cheapest strategy and how to carry it
// out.
type Policy struct {
	// Strategy is the cheapest strategy.
	Strategy Strategy
	// Schedule lists the interventions the strategy issues on the noise-free
	// path (every ε = 0, the median path while drift stays clear of 0 and 1),
	// in step order; a throttle appears once, at the step it starts. Empty
	// when the strategy never intervenes on that path.
	Schedule []Step
	// Conditions are the strategy's conditional clauses, from its triggers
	// and the thresholds, ending with when to stand down.
	Conditions []Condition
	// Expected is the strategy's expected cost.
	Expected Cost
	// Confidence is 1 − min(1, standard error / mean) of the strategy's total
	// cost, in [0, 1]; 1 when the mean is 0.
	Confidence float64
	// DecisionTree is a readable multi-line rendering of the policy.
	DecisionTree string
	// Comparison sets the strategy against immediate_escalate.
	Comparison Comparison
	// Outcomes holds every strategy's estimate, in Strategies() order.
	Outcomes []Outcome
}

// Optimize runs cfg.Runs seeded Monte Carlo runs of every strategy over
// horizon steps (cfg.Horizon when horizon < 1), starting from the
// trajectory's overall drift and velocity with noise of standard deviation
// max(t.Sigma, cfg.MinSigma), and returns the cheapest strategy's policy; a
// tie goes to the earlier strategy in Strategies() order. The same trajectory,
// horizon and config give the same policy. Run i of every strategy sees the
// same noise. The work is O(5 × Runs × horizon), without allocation per step.
func Optimize(t Trajectory, horizon int, cfg Config) Policy {
	cfg = cfg.normalized()
	if horizon < 1 {
		horizon = cfg.Horizon
	}
	m := newModel(t, horizon, cfg)
	all := Strategies()
	p := Policy{Outcomes: make([]Outcome, len(all))}
	rs := make([]rules, len(all))
	for i, s := range all {
		rs[i] = rulesFor(s, m.moderate, m.high, m.critical)
	}
	costs, stderrs := m.estimate(rs, cfg.Runs, cfg.Seed, nil)
	best, naive := 0, 0
	for i, s := range all {
		c, se := costs[i], stderrs[i]
		p.Outcomes[i] = Outcome{Strategy: s, Expected: c, StdErr: se}
		if c.Total < p.Outcomes[best].Expected.Total {
			best = i
		}
		if s == ImmediateEscalate {
			naive = i
		}
	}
	win := p.Outcomes[best]
	p.Strategy, p.Expected = win.Strategy, win.Expected
	p.Schedule = m.schedule(rulesFor(win.Strategy, m.moderate, m.high, m.critical))
	p.Confidence = confidence(win.Expected.Total, win.StdErr)
	p.Comparison = compare(win.Expected.Total, p.Outcomes[naive].Expected.Total)
	p.Conditions = conditions(win.Strategy, t.Thresholds, cfg.Lookahead)
	p.DecisionTree = decisionTree(&p, t.Thresholds, cfg)
	return p
}

// confidence is 1 − min(1, stderr/mean), 1 for a zero mean.
func confidence(mean, stderr float64) float64 {
	if mean <= 0 {
		return 1
	}
	c := 1 - min(1, stderr/mean)
	if !(c >= 0) {
		return 0
	}
	return c
}

// compare builds the comparison of the optimized and naive costs.
func compare(optimized, naive float64) Comparison {
	c := Comparison{OptimizedCost: optimized, NaiveCost: naive}
	if naive > 0 {
		c.SavingsPercent = max(0, (naive-optimized)/naive*100)
	}
	return c
}
