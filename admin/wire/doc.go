// Package wire holds the JSON shapes of Vigil's admin API (/v1): the request
// and response bodies the server writes and the CLI decodes, and the
// conversions from governor types into them.
//
// The nouns: [Evaluation] (the verdict object of POST /v1/evaluate),
// [EvaluateRequest], [Agent] and [AgentSummary] (views of an agent's state),
// [Contract] (an agent's contract as sent and returned), [Archetype], [Info],
// [Health], [ErrorResponse] (the one error envelope), and the ledger bodies
// [LedgerEntries], [LedgerTrace] and [LedgerReport] ([LedgerRef] points at
// one entry), the control plane's [DirectiveRequest], [Directive] (with
// [DirectiveTarget] and [DirectiveParameters]), [DirectiveResult] and
// [DirectiveList], provenance: [ProvenanceList] of [ProvenanceEvent], and
// the override queue: [Approval] (with [ApprovalAction]), [ApprovalList]
// and the [ApprovalDecision] body, and the trajectory engine: [Trajectory]
// (with [DriftScores], [DriftPoint], [TrajectoryMarker], [Recommendation]
// and [Policy]), [TrajectoryHistory] (of [DriftRecord] and [Intervention]),
// [Fleet] (of [FleetAgent], with [FleetSummary]), [SimulateRequest] and
// [Simulation] (of [CurvePoint]).
//
// Invariants:
//   - Every JSON field name is snake_case; the structs here are the wire
//     contract, and governor structs never go on the wire directly.
//   - Lists are written as [] and maps as {}, never null, unless a field is
//     documented as nullable (Evaluation.Ledger, Agent.LastEvaluation,
//     Archetype.Prior, Directive.DurationSeconds, Directive.ExpiresAt,
//     Directive.ExpiredAt, Approval.ExpiresAt, Approval.DecidedAt,
//     Approval.DecidedBy, Approval.Ledger, Trajectory.Policy,
//     FleetAgent.Strategy, FleetAgent.ExpectedCost,
//     Simulation.EstimatedTotalCost, Intervention.Timestamp).
//   - Timestamps are RFC 3339 strings in UTC with millisecond precision
//     ([Time]).
//   - Conversions (NewEvaluation, NewAgent, NewContract, ...) copy: a wire
//     value never aliases the governor value it was built from.
//   - Ledger entries are not structs here: they are the stored bytes
//     (ledger.Record.JSON) carried as json.RawMessage, so that what a client
//     receives verifies with the published hash rule.
//
// The package imports no HTTP framework: it is plain data and may be used by
// any client.
package wire
