// Package controlplane lets operators steer the fleet at runtime through
// directives (API.md section 6): it issues them, resolves their targets,
// expires them and undoes their effects, publishes the overlay they make to
// the governor, and records provenance events (API.md section 11).
//
// The nouns: Plane issues, lists and expires directives; Directive is one
// directive (its Type, Target and Parameters, issued by an IssueRequest);
// Event is one provenance event; Store keeps directives and events —
// FileStore (embedded, in the data directory), RedisStore (shared by several
// sidecars; a Watcher, which tells the plane of changes made elsewhere),
// MemoryStore, or any implementation that passes controlplanetest.Run. Fleet
// (the agents a target is resolved against) and Sink (where overlays go) are
// what the plane needs of the governor; *governor.Engine is both.
//
// # How a directive takes effect
//
// The plane keeps every directive in memory. On each change (issue, expiry,
// release) it rebuilds the whole governor.Overlays from the active
// directives and hands it to the Sink, which swaps it in atomically; the next
// evaluation of each agent sees it, and evaluations never wait on the plane.
// Per agent, from the active directives binding it: quarantine sets
// Quarantined (ESCALATE before any other check; nothing bypasses it);
// tighten multiplies the drift thresholds (ThresholdFactor is the product of
// the factors); enforce adds its invariants, compiled once when issued (or
// loaded) and cached per directive; re_anchor maps its term to the newest
// directive re-anchoring it; broadcast_reminder sets Advisory to the newest
// reminder's message; Directives lists the ids binding the agent, sorted.
// Expiring a directive drops it from the rebuild, which undoes its effect.
//
// # Lifecycle and expiry
//
// Targets are resolved once, when a directive is issued: the criteria (agent
// ids, archetype, team, drift status) are ANDed over the registered agents,
// and the resolved ids are sorted. An agent registered later is not bound.
// A directive carries a Duration or none. Expiry of the directives whose
// duration elapsed (ExpireDue) runs every Config.ExpiryEvery evaluations —
// callers call ObserveEvaluation after each evaluation that is not a dry run
// — every Config.ExpiryInterval in Run, and when a Plane is created over a
// store holding directives that came due while the process was down.
// Expire expires one directive on an operator's request.
//
// # Choices where API.md is silent
//
//   - release and relax act once: their agents are taken out of the active
//     quarantine (tighten) directives binding them (recorded in Released);
//     one left binding nobody is expired and CONTROL.DIRECTIVE_RELEASED is
//     recorded for it. A release or relax is itself recorded with status
//     "expired" at once (expired_at = issued_at) and takes no duration.
//   - Agent ids that are not registered resolve to nothing. A directive
//     that resolves to no agent is still issued, with resolved_agents [],
//     and binds nobody (an operator may pre-issue).
//   - Archetype names must be known archetypes (target.archetype); team and
//     agent ids are matched exactly. Drift status reads the agent's severity
//     against its effective (tightened) thresholds.
//   - A re_anchor term is any non-empty term, stored trimmed and lower case
//     (anchor terms match case-insensitively); it need not be one of the
//     target's anchors (a term an agent lacks has no effect on it).
//   - Invariant names must be unique within a directive; message is
//     optional. reason is optional.
//   - Parameters a type does not take are refused, naming the first of them.
//   - ExpiredAt is when the effects were undone, which for a duration is the
//     first expiry check at or after ExpiresAt.
//   - A stored enforce invariant that no longer compiles becomes an
//     invariant that always fails (fail closed).
//   - Provenance: issue records CONTROL.DIRECTIVE_ISSUED (actor the operator,
//     actor_type "operator", target the directive id, the request's reason;
//     details: type, resolved_agents, and for a release or relax
//     released_from, the directives it changed); an operator's Expire
//     records CONTROL.DIRECTIVE_EXPIRED with actor the operator; expiry of an
//     elapsed duration records it with actor and actor_type "system".
//   - A disabled plane (Config.Enabled false) neither loads nor publishes:
//     Issue and Expire return ErrDisabled, List returns nothing, Get returns
//     ErrNotFound, ObserveEvaluation returns at once; Events still reads the
//     store.
//
// # Several sidecars on one Redis
//
// RedisStore keeps the directives in one Redis hash and the provenance
// events in a Redis stream, under one hash tag for the whole fleet
// ({vigil:cp} by default; see RedisStore for the keys), and is a Watcher:
// every save publishes the directive's id on a channel. Plane.Run watches
// it and, on each signal and after each (re)subscription — pub/sub drops
// what is published while a subscriber is disconnected — calls Reload,
// which re-reads every directive and republishes the overlays (compiled
// invariants are kept per directive id). Signals are coalesced: one reload
// at a time, and one more for whatever arrived meanwhile. Evaluations never
// wait on Redis: while it is unreachable each sidecar keeps enforcing the
// last overlays it has, Issue and Expire fail fast (RedisOptions.Timeout),
// and a failed reload is retried on the next signal and with a backoff. A
// directive issued on one sidecar binds on the others in about a
// millisecond (BenchmarkDirectivePropagation; the goal is p99 <= 100 ms).
// A circuit breaker (gobreaker) sits in front of every RedisStore call but
// the subscription (see "When Redis fails" below).
//
// Each sidecar still expires directives whose duration elapsed on its own,
// so several may record CONTROL.DIRECTIVE_EXPIRED for one directive, and
// two sidecars changing one directive at once (an Expire racing a release)
// resolve by the last write.
//
// # When Redis fails
//
// Each RedisStore has a circuit breaker (BreakerOptions): after 5 calls in
// a row fail (Redis unreachable or timing out; an error reply about the
// command itself means Redis answered and counts as a success) it opens for
// 2 s, and every call fails at once with ErrUnavailable rather than waiting
// out RedisOptions.Timeout; then one probe goes through, and its success
// closes the breaker. Watch is not behind it: its subscription reconnects
// on its own. Healthy reports whether the breaker is closed; Check pings
// Redis through it, for a health check (GET /v1/health answers degraded
// while it fails), and is the probe that closes the breaker when nothing
// else calls Redis.
//
// # Agent state
//
// The governor keeps each agent's state (trust, fingerprint, window, drift
// history) in memory; a Snapshotter persists it in a SnapshotStore —
// FileStore (agents/<id>.json in the data directory, replaced atomically),
// RedisStore (one hash field per agent, {vigil:cp}:agents), MemoryStore —
// behind the hot path. RestoreAll, before serving, restores the snapshot of
// every configured agent (skipping, with a log line, those of unknown agents
// and those that cannot be decoded or restored), so a restarted sidecar
// continues where it stopped. Run saves, every interval (5 s by default),
// the agents whose state changed since their last save, which it tells from
// each agent's status (observations, last evaluation, trust, violations,
// alerts); Flush saves them once more at shutdown. A kill -9 loses at most
// one interval of state; on Redis the last sidecar to save an agent wins.
//
// # Approvals (the override queue)
//
// An ESCALATE decision is held for a human (API.md sections 4 and 9).
// Approvals keeps the queue: Request creates a pending Approval of the held
// action (its type, target and parameters, bound by governor.ActionDigest
// of agent, type, target and parameters; the decision's reasoning; the
// ledger entry); Decide records an operator's approve or deny; Wait blocks
// until a decision (or expiry); List and Get read the queue. An
// ApprovalStore keeps them — the same FileStore (approvals.ndjson, an
// append-only log), RedisStore (a hash, a pending index and a decision
// channel) and MemoryStore, or any store passing
// controlplanetest.RunApprovals; Grantor is what the queue needs of the
// governor (*governor.Engine).
//
// Lifecycle: a pending approval expires undecided after
// ApprovalConfig.HoldWindow (10 minutes by default, longer than the proxy's
// 30 s hold so an agent refused after the hold may retry after a later
// approval): Run's timer (every ApprovalConfig.ExpiryInterval), a Wait that
// sees it due, or a Decide that comes too late expire it, recording
// CONTROL.APPROVAL_EXPIRED (actor "system"). A decision is a compare-and-set
// on the stored status, so of two operators (or sidecars) deciding at once
// exactly one wins and the other gets ErrConflict, and each decision or
// expiry is recorded once: CONTROL.APPROVAL_APPROVED or
// CONTROL.APPROVAL_DENIED with actor the operator and target the approval
// id. An approved action may pass once, for GrantWindow (10 minutes, fixed
// by API.md): Decide grants it to this process's governor
// (GrantApproval(agent, digest, decided_at+10m)), whose human_override then
// scores the identical action 1.0 once and uses the grant up; a denied or
// expired approval grants nothing, so the retry escalates again (and asks
// anew).
//
// Across sidecars: RedisStore publishes the id of every decision on
// {vigil:cp}:approvals:decided in the same script as the compare-and-set.
// Each sidecar's Run watches it (ApprovalWatcher), wakes the local waiters
// of that approval and grants an approval to its own governor, once per
// process. Pub/sub loses what is published while a subscriber is away, so
// Wait also re-reads every ApprovalConfig.PollInterval (500 ms), and after
// each re-subscription Run grants the approved approvals still within
// their grant; decisions made before a process first subscribed are not
// granted there (fail closed). In one process a decision wakes its waiters
// at once, through a channel per waiter.
//
// Intended use by a holding caller (the proxy): evaluate; on ESCALATE,
// Request, then Wait with the hold timeout as deadline; when approved,
// evaluate the identical action again — the grant makes it pass and uses it
// up, and the ledger records the ALLOW — then forward.
//
// # Caveats
//
// Decided approvals are never deleted (approvals.ndjson and the Redis hash
// grow with the fleet's escalations; List reads them whole except the
// pending ones). A grant is per governor: several sidecars serving the
// same agent id could each let one retry pass.
//
// Expired directives stay in memory and in the store (Get must find them);
// FileStore rewrites directives.json whole on every save, which suits the
// hundreds of directives an operator issues, not millions. A change the
// store refuses is not applied; when the store fails after the directive
// was saved, the error is returned with the directive, which is in force.
package controlplane
