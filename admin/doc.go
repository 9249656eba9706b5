// Package admin serves Vigil's admin API under /v1: infrastructure (health,
// info, the OpenAPI document), evaluation and the playground, agents and
// their contracts, archetypes, the behaviour ledger (/v1/ledger: entries,
// causal traces, narratives, verification and export), the control plane's
// directives (/v1/control/directives), provenance (/v1/provenance), the
// override queue (/v1/approvals) and the trajectory engine
// (/v1/trajectory: an agent's projection and policy, its history, the
// fleet, simulation). It owns the HTTP router (Gin), API keys
// and roles, the one error envelope, request decoding and the OpenAPI
// document; the JSON shapes themselves live in package admin/wire.
//
// The nouns: [Server] (built once by [New] from [Options], served through
// [Server.Handler]), [Key] and [Role] (who may call what), [Info] (what
// GET /v1/info reports) and [Governor] (the methods of *governor.Engine the
// API calls).
//
// Invariants:
//   - Gin is an implementation detail: no Gin type appears in an exported
//     signature, and the router is reached only through Server.Handler.
//   - Every /v1 route except GET /v1/health requires X-Api-Key. Roles are
//     ordered viewer < operator < admin: viewer may call every GET, operator
//     also evaluate, the playground and issuing and expiring directives,
//     admin everything (PUT agents). Keys
//     are compared in constant time against every configured key, and key
//     values are never logged.
//   - Handlers return errors; one middleware turns them into the envelope
//     {"error": {"code", "message", "details"}} (details is always an
//     object). A recovered panic is a 500 "internal" envelope; the panic and
//     its stack go to the log, never to the client.
//   - Unknown paths answer 404 not_found and a known path with another method
//     answers 405 method_not_allowed with an Allow header, both in the
//     envelope.
//   - Request bodies are limited to 1 MiB (413 payload_too_large) and decoded
//     strictly: unknown fields, wrong types, trailing data and empty bodies
//     are 400 invalid_request, with details.field naming the field when it
//     is known.
//   - Every response is application/json; charset=utf-8, except a ledger
//     narrative (text/plain; charset=utf-8) and a ledger export
//     (application/x-ndjson).
//   - With a ledger (Options.Ledger), POST /v1/evaluate answers only after
//     the decision's entry is written; if it cannot be, the answer is 503
//     unavailable and carries no verdict (fail closed). The governor's state
//     has changed by then. Ledger entries go on the wire as the stored bytes
//     (ledger.Record.JSON), never re-encoded, so a client can verify them.
//   - Without a ledger every /v1/ledger route answers 404 not_found ("the
//     ledger is disabled (runtime.enable_ledger: false)").
//   - The operator of a directive is the principal of the request's key. A
//     body "operator" that differs is 403 forbidden, unless the key is an
//     admin's, which may act for another operator (the claim is recorded).
//   - Without a control plane (Options.Control nil) or with a disabled one,
//     issuing and expiring answer 409 control_plane_disabled, whose envelope
//     alone also carries "success": false; the directive list and
//     provenance are empty. Each POST /v1/evaluate that is not a dry run
//     counts towards the plane's periodic expiry check
//     (Plane.ObserveEvaluation), and DELETE runs the check before it
//     expires the directive asked for.
//   - A directive that is in force but whose provenance event could not be
//     recorded is still answered as issued (or expired), and the failure
//     logged: an error would invite the operator to issue it twice.
//   - With an override queue (Options.Approvals), each ESCALATE of POST
//     /v1/evaluate that is not a dry run gets a pending approval, named by
//     "approval_id" in the answer (absent otherwise; a failure to store it
//     is logged and the recorded verdict still answered). Approve and deny
//     act as the key's principal like directives; a decided or expired
//     approval is 409 conflict; without a queue the list is empty and
//     deciding is 409 control_plane_disabled.
//   - GET /v1/trajectory/{agent_id} always serves the agent's current
//     policy, optimizing on the request when the analyzer's cache has none.
//     GET /v1/trajectory/fleet never optimizes on the request: it answers
//     within Options.FleetBudget (from the start of the request) with the
//     cached policies, each labelled current, stale or pending, and
//     refreshes the others in the background (one refresh per Server at a
//     time, not tied to the request, its panics logged).
//   - Store failures are 503 unavailable; the cause is logged, never sent.
//
// Caveats: an export is streamed; if it fails after the first bytes were
// sent the connection is cut (the chunked body never ends properly), which
// is the only way HTTP/1.1 can tell the client the body is incomplete.
//
// Gin's mode is process-global. In debug mode (Gin's default outside
// tests when GIN_MODE is unset) Gin itself prints a warning and the route
// table to stdout when New builds the router; this package does not change
// the global mode.
package admin
