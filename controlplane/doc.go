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
// A circuit breaker (gobreaker) in front of Redis comes with the
// failure-behaviour work.
//
// Each sidecar still expires directives whose duration elapsed on its own,
// so several may record CONTROL.DIRECTIVE_EXPIRED for one directive, and
// two sidecars changing one directive at once (an Expire racing a release)
// resolve by the last write.
//
// # Caveats
//
// Expired directives stay in memory and in the store (Get must find them);
// FileStore rewrites directives.json whole on every save, which suits the
// hundreds of directives an operator issues, not millions. A change the
// store refuses is not applied; when the store fails after the directive
// was saved, the error is returned with the directive, which is in force.
package controlplane
