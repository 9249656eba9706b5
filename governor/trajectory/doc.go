// Package trajectory projects an agent's drift and plans interventions.
//
// It implements GOVERNOR.md §10. Given an agent's drift history
// (governor.Engine.DriftHistory) and effective thresholds
// (governor.AgentStatus.Thresholds, after tighten), Project fits a velocity,
// projects the drift, rates the risk and places markers; Optimize simulates
// every Strategy with seeded Monte Carlo runs and returns the cheapest as a
// Policy; Simulate runs one strategy for the what-if view; Recommend says what
// to do now. Everything is pure: no I/O, no goroutines, no package-level
// mutable state (the Analyzer's cache aside), and the same inputs and
// Config.Seed give the same answer.
//
// The nouns: Trajectory (with its Points and Markers) is where drift is going;
// Policy (with its Schedule of Steps, Conditions, Outcomes and Comparison) is
// what to do about it; Simulation is one strategy's what-if; Config and Costs
// set the constants; Intervention, Strategy and RiskLevel are the enums;
// Past is an intervention that already happened. Analyzer (and its Analysis,
// with its PolicyState) is the one stateful noun: it caches each agent's
// policy by the values Optimize reads, so a fleet view or a periodic check
// re-optimizes only the agents whose drift changed; it is safe for
// concurrent use and bounded. Analyze always returns the current policy
// (optimizing if it must); Cached never optimizes nor waits, and returns the
// current policy, the agent's last one labelled stale, or none labelled
// pending, for a view that must answer at once and refresh in the
// background.
//
// # Invariants
//
//   - Projected has Config.Horizon points; every projected field and every
//     Simulation.Curve point is in [0, 1].
//   - Trajectory.Sigma >= Config.MinSigma.
//   - Policy.Outcomes lists every strategy in Strategies() order; the policy's
//     strategy has the lowest expected total (ties: the earlier strategy), so
//     SavingsPercent is never negative; Confidence is in [0, 1].
//   - Simulate's EstimatedCost equals the strategy's Optimize outcome for the
//     same trajectory, horizon and config.
//   - Project, Optimize and Simulate never fail: a Config field that Validate
//     rejects is replaced by its default, and horizon < 1 means
//     Config.Horizon.
//   - With the optimizer on, Analyze's PolicyState is PolicyCurrent, and
//     Cached's is current only when its Analysis equals Analyze's for the
//     same inputs; a stale policy is the one of the agent's latest inputs
//     (by when their optimization started) whose optimization completed.
//     Cached never calls Optimize. With the optimizer off PolicyState is
//     empty.
//
// # Choices where GOVERNOR.md is silent
//
// Projection:
//   - The velocity is the least-squares slope against Step (the observation
//     count), so it is per observation. Fewer than two points, or points all
//     at one step, give zero velocity; fewer than Window points use them all.
//   - Current is the latest observed point, not the fitted value.
//   - Sigma is the standard error of the overall fit, sqrt(SSR / (n − 2)),
//     0 for fewer than three points; then at least MinSigma.
//   - The risk level uses current + velocity × Lookahead (clamped), computed
//     directly, so it does not depend on Horizon.
//   - A planned marker is placed at the first projected point at or above a
//     threshold, only when the current drift is below it: a threshold already
//     reached is not "crossed". Past interventions of type advisory, throttle
//     or escalate become markers whether or not they were applied; none is
//     skipped. Markers are ordered by step, past before planned at a tie.
//
// The dynamics (one simulation step is one observation, since the velocity
// is per observation; step 0 is now, starting from the current overall drift
// and velocity):
//   - A strategy checks the drift before the step's move: at step t it looks
//     at d(t) and issues at most one intervention, the most severe whose
//     trigger d(t) reaches. It never steps down: a throttle stays active to
//     the end of the horizon, and no advisory follows a throttle. Graduated
//     skips lower levels when drift jumps past them (at critical it
//     escalates without an advisory first).
//   - Behavioural effects follow the formula v(t+1) = v(t) × (1 − effect):
//     an advisory (0.3, once) and an active throttle (0.6, every step) change
//     the velocity from the next step on; they scale v whatever its sign.
//   - Mechanical effects are immediate. A throttled step lets half the
//     actions through; drift accrues per action, so the step moves drift by
//     v/2 with noise variance σ²/2. Escalation removes the agent at once:
//     drift is frozen, and no noise, throttle or violation cost accrues after
//     it, only the escalation cost.
//   - The violation (drift at or above critical while not escalated) is
//     charged once per run. It is checked on d(t) after step t's decision,
//     so escalating at critical (graduated) avoids it, and on the final state
//     d(horizon), where no step is left to react.
//   - Costs: an advisory each time issued, a throttle for every step it is
//     active (including its first), an escalation once.
//   - Noise: run i of every strategy draws from a PCG seeded from (Seed, i)
//     through SplitMix64, so the strategies are compared on the same noise
//     (common random numbers) and Simulate reproduces Optimize's runs. The
//     effects are constants of the model, not Config fields.
//
// The answer:
//   - The schedule is the winner's interventions on the noise-free path
//     (every ε = 0), a throttle once at its start, steps counted from now.
//     Simulation.Markers are the same interventions at absolute steps (last
//     observed step + schedule step) like Trajectory.Markers; Policy.Schedule
//     steps stay relative, as the wire format asks.
//   - Recommend with a policy returns what the schedule issues at step 0, so
//     a strategy that waits recommends none now.
//   - Conditions are the strategy's triggers and a stand-down clause: drift
//     below the midpoint of the low and moderate thresholds (0.15 with the
//     defaults) within Lookahead actions.
//   - Optimize runs the strategies one after another: it takes about 2 ms
//     with the defaults, so goroutines would add nothing but scheduling.
package trajectory
