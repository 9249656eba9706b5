package trajectory

import (
	"math"
	"math/rand/v2"
)

// Effects of the interventions on the agent (GOVERNOR.md §10).
const (
	// advisoryEffect cuts the velocity once, when the advisory is issued.
	advisoryEffect = 0.3
	// throttleEffect cuts the velocity at every step the throttle is active.
	throttleEffect = 0.6
	// throttleRate is the share of the agent's actions a throttled step lets
	// through. Drift accrues per action, so a throttled step moves drift by
	// throttleRate × v, with noise of variance throttleRate × σ².
	throttleRate = 0.5
)

// rules are a strategy's triggers: each intervention is issued at the first
// step whose drift (before the step's move) is at or above its trigger. −Inf
// fires at step 0, +Inf never.
type rules struct {
	advisory, throttle, escalate float64
}

// rulesFor returns the triggers of s against the thresholds. An unknown
// strategy never intervenes, like NoOp.
func rulesFor(s Strategy, moderate, high, critical float64) rules {
	never, now := math.Inf(1), math.Inf(-1)
	switch s {
	case EarlyAdvisory:
		return rules{advisory: now, throttle: never, escalate: never}
	case WaitAndThrottle:
		return rules{advisory: never, throttle: high, escalate: never}
	case ImmediateEscalate:
		return rules{advisory: never, throttle: never, escalate: now}
	case Graduated:
		return rules{advisory: moderate, throttle: high, escalate: critical}
	}
	return rules{advisory: never, throttle: never, escalate: never}
}

// model is the dynamics of one optimization: the starting state, the noise,
// the violation threshold, the horizon and the costs.
type model struct {
	d0, v0, sigma float64
	moderate      float64
	high          float64
	critical      float64
	horizon       int
	costs         Costs
}

// newModel takes the overall drift, velocity and sigma of t (sigma at least
// cfg.MinSigma; NaN inputs become 0).
func newModel(t Trajectory, horizon int, cfg Config) model {
	finite := func(x float64) float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0
		}
		return x
	}
	return model{
		d0:       clamp01(t.Current.Overall),
		v0:       finite(t.Velocity.Overall),
		sigma:    max(finite(t.Sigma), cfg.MinSigma),
		moderate: t.Thresholds.Moderate,
		high:     t.Thresholds.High,
		critical: t.Thresholds.Critical,
		horizon:  horizon,
		costs:    cfg.Costs,
	}
}

// run simulates one run of the strategy with triggers r. noise holds the
// standard normal ε/σ of each step; nil runs the noise-free path. When curve
// is not nil, d(t+1) is added to curve[t] for every step (a frozen drift
// after escalation). When sched is not nil, each issued intervention is
// appended to it.
//
// Step t (0 = now) runs in this order:
//  1. the strategy looks at d(t) and issues at most one intervention, the
//     most severe whose trigger d(t) reaches: escalate; else throttle if not
//     yet active; else advisory if neither an advisory nor a throttle was
//     issued before;
//  2. an escalated agent leaves service: no further move, noise or cost;
//  3. if d(t) ≥ critical the run has a violation (counted once);
//  4. the move: d(t+1) = clamp(d(t) + r·v(t) + √r·σ·z), r = throttleRate while
//     throttled, else 1;
//  5. v(t+1) = v(t) × (1 − effect): advisory 0.3 on the step it is issued,
//     throttle 0.6 on every step it is active.
//
// The final state d(horizon) is checked for a violation too.
func (m *model) run(r rules, noise *normals, curve []float64, sched *[]Step) (intervention, violation float64) {
	d, v := m.d0, m.v0
	advised, throttled, violated := false, false, false
	sqrtRate := math.Sqrt(throttleRate)
	for t := 0; t < m.horizon; t++ {
		var issued Intervention
		switch {
		case d >= r.escalate:
			issued = Escalate
		case !throttled && d >= r.throttle:
			issued, throttled = Throttle, true
		case !advised && !throttled && d >= r.advisory:
			issued, advised = Advisory, true
			intervention += m.costs.Advisory
		}
		if issued != "" && sched != nil {
			*sched = append(*sched, Step{Step: t, Intervention: issued})
		}
		if issued == Escalate {
			if curve != nil {
				for k := t; k < len(curve); k++ {
					curve[k] += d
				}
			}
			intervention += m.costs.Escalate
			if violated {
				violation = m.costs.Violation
			}
			return intervention, violation
		}
		if d >= m.critical {
			violated = true
		}
		step, noiseScale := v, m.sigma
		if throttled {
			intervention += m.costs.ThrottlePerStep
			step, noiseScale = throttleRate*v, sqrtRate*m.sigma
		}
		if noise != nil {
			step += noiseScale * noise.at(t)
		}
		d = clamp01(d + step)
		if issued == Advisory {
			v *= 1 - advisoryEffect
		}
		if throttled {
			v *= 1 - throttleEffect
		}
		if curve != nil {
			curve[t] += d
		}
	}
	if violated || d >= m.critical {
		violation = m.costs.Violation
	}
	return intervention, violation
}

// estimate runs runs seeded runs of r and returns the mean costs and the
// standard error of the mean total. Run i draws its noise from a PCG seeded
// from (seed, i) alone, so every strategy sees the same noise in run i
// (common random numbers) and Simulate agrees with Optimize. curve, when not
// nil, receives the sum over runs of each step's drift.
func (m *model) estimate(rs []rules, runs int, seed uint64, curve []float64) ([]Cost, []float64) {
	src := rand.NewPCG(0, 0)
	noise := &normals{rng: rand.New(src), z: make([]float64, 0, m.horizon)}
	hi := mix(seed)
	type acc struct{ sumIv, sumViol, mean, m2 float64 }
	accs := make([]acc, len(rs))
	for i := range runs {
		src.Seed(hi, mix(seed^(uint64(i)+1)*0x9e3779b97f4a7c15))
		noise.z = noise.z[:0]
		for k, r := range rs {
			iv, viol := m.run(r, noise, curve, nil)
			a := &accs[k]
			a.sumIv += iv
			a.sumViol += viol
			// Welford's update of the mean and variance of the totals.
			total := iv + viol
			delta := total - a.mean
			a.mean += delta / float64(i+1)
			a.m2 += delta * (total - a.mean)
		}
	}
	n := float64(runs)
	costs, stderrs := make([]Cost, len(rs)), make([]float64, len(rs))
	for k, a := range accs {
		c := Cost{Intervention: a.sumIv / n, Violation: a.sumViol / n}
		c.Total = c.Intervention + c.Violation
		costs[k] = c
		if runs > 1 {
			stderrs[k] = math.Sqrt(a.m2/(n-1)) / math.Sqrt(n)
		}
	}
	return costs, stderrs
}

// normals are the standard normal draws of one run, drawn on first use and
// shared by every strategy simulated on that run: step t of every strategy
// sees the run's t-th draw, exactly as if each drew its own from the same
// seed, at a fifth of the cost.
type normals struct {
	rng *rand.Rand
	z   []float64
}

func (n *normals) at(t int) float64 {
	for len(n.z) <= t {
		n.z = append(n.z, n.rng.NormFloat64())
	}
	return n.z[t]
}

// schedule returns the interventions of r on the noise-free path.
func (m *model) schedule(r rules) []Step {
	sched := []Step{}
	m.run(r, nil, nil, &sched)
	return sched
}

// mix is SplitMix64's finalizer: it spreads nearby seeds apart.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
