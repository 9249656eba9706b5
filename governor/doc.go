// Package governor decides what an agent may do.
//
// The governor turns one Action of one agent into a Decision: a Verdict
// (ALLOW, DENY, ESCALATE, MODIFY or SUSPEND), the Unified Confidence Score,
// the deciding tier, the reasoning, and a complete trace of how it got there.
// It is pure Go: no I/O, no goroutines of its own, and no imports from the
// rest of Vigil. The algorithm and every constant are those of
// shared/design/GOVERNOR.md; each constant is a field of Config.
//
// There are few nouns: Engine evaluates; Contract, Rule and Overlay configure
// it; Action and Context describe a request; Decision (with its Steps and
// DimensionScores) explains the answer; AgentStatus, Snapshot and DriftPoint
// expose an agent's state.
//
// # The pipeline
//
// Pre-checks (quarantine, then suspension) decide alone when they apply.
// Otherwise eleven steps run in order, each recorded with its input state,
// output state, duration and whether it decided: trust_decay,
// contextual_modifier, reversibility, dimension_eval (13 dimensions plus the
// overlay's invariants), cross_dimensional, tier1 (vetoes), ucs_compute,
// ucs_adjustment, reversibility_escalation, tier2 (thresholds; skipped for an
// irreversible action) and tier3 (deliberation). The steps after the deciding
// one are not run, so exactly one step has Decided set and it is the last.
//
// # Concurrency
//
// Contracts are compiled once (CEL programs, globs, windows) into immutable
// values; the registry of agents, the constitutional rules and the directive
// overlays are immutable snapshots behind atomic pointers. Each agent's
// mutable state is guarded by its own mutex, so thousands of agents evaluate
// in parallel without a global lock. Evaluations of one agent are serialized,
// which keeps its trust and fingerprint consistent.
//
// # Choices where GOVERNOR.md is silent
//
//   - Tier 0 is recorded for decisions taken by a pre-check.
//   - Pre-checks change no state: a quarantined agent's attempts are not
//     observed into its fingerprint.
//   - Every evaluated action (not dry runs, not pre-checks) is one
//     observation of the fingerprint; its outcome is the verdict.
//   - Rate limits count permitted actions (ALLOW and MODIFY) of the last
//     minute; a refused attempt does not consume the budget.
//   - The target distribution keys a target by the first prior category word
//     it contains, else by its first two path segments without ids.
//   - The JSD of an empty distribution with any other is 0 (no evidence).
//   - Semantic drift enters overall drift (weight 1.0) only once an anchor
//     term has been used in the window.
//   - A type that matches no reversibility word and is not a GET/HEAD is
//     compensable.
//   - incident_detection scores 1.0 when no incident pattern applies.
//   - The contextual trust modifier and the mandatory-review rule use the
//     effective trust of the evaluation (stored trust after decay, plus the
//     modifier clamped to ±0.1).
//   - CEL expressions that fail to evaluate (a missing key, a type error)
//     count as false: fail closed.
//   - Evaluate recovers a panic and returns ErrUndecidable; callers refuse.
//   - In tier 3, an approval granted for this exact action (GrantApproval)
//     allows it before the escalation rules, so that approving a held
//     irreversible action lets its retry through once. An approval does not
//     lift other vetoes or a tier 2 denial.
package governor
