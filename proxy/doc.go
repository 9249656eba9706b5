// Package proxy is the forward proxy agents use as HTTP_PROXY and
// HTTPS_PROXY: every outbound tool call is identified, turned into an action
// (package toolcall), decided by the governor, recorded in the ledger and
// only then forwarded, held for a human, changed or refused (API.md section
// 4). It is built on github.com/elazarl/goproxy, whose types stay inside
// this package.
//
// The nouns are few: Proxy (the server), Options (what it is built from),
// CA (the interception certificate authority) and Stats (its counters). The
// governor, the ledger and the override queue are reached through small
// interfaces declared here (Governor, Recorder, Holder); *governor.Engine,
// *ledger.Ledger and *controlplane.Approvals satisfy them.
//
// Invariants:
//   - No effect without a record: a call that acts on the world is forwarded
//     only after its decision has been appended to the ledger; when the
//     append fails the call is refused (503).
//   - Fail closed: a call the governor cannot decide (an error, a recovered
//     panic) is refused, never forwarded.
//   - The protocol's own MCP traffic (initialize, notifications, the list
//     methods, the session's GET and DELETE) is forwarded without a
//     decision and leaves no ledger entry, so any MCP client works
//     unchanged. Those responses carry X-Vigil-Verdict: ALLOW and no
//     X-Vigil-Ledger-Seq.
//   - The upstream transport never reads HTTP_PROXY or HTTPS_PROXY: the
//     proxy cannot loop through itself.
//   - A forwarded call is in flight until its response body ends; an agent
//     that becomes quarantined or suspended has its in-flight calls
//     cancelled (ApplyOverlays), which lowers its trust and is recorded as a
//     provenance event (PROXY.CALL_INTERRUPTED). A completed call raises
//     trust; a call the tool never answered leaves it unchanged.
//
// Decisions where API.md is silent:
//   - A held call that an operator approves is forwarded without a second
//     evaluation (a quarantined agent's call would otherwise be escalated
//     again); the governor's one-retry grant for that action is withdrawn so
//     the approval is used once. Its response carries X-Vigil-Verdict:
//     ESCALATE (the recorded verdict) and X-Vigil-Approval: approved.
//   - A JSON-RPC batch that contains a refused message is refused as a whole
//     and not held: escalated messages get approvals, so a retry after the
//     approval passes.
//   - A GET or DELETE is MCP session traffic (forwarded without a decision)
//     only when its Mcp-Session-Id is one the endpoint (host and path)
//     issued through this proxy; with any other id it is governed like a
//     plain request, so the header cannot smuggle a DELETE past governance.
//   - Shutdown ends an MCP session's event stream (its GET) at once rather
//     than waiting for it: the session outlives any grace period.
//   - Shutdown closes at once the connections on which no request has
//     started: an agent's HTTP client may dial a connection it never uses,
//     and the http.Server alone would wait until it is 5 seconds old.
//   - A CONNECT tunnel's connection is kept, to be closed at shutdown,
//     only until it closes.
//   - Responses the proxy answers before any decision (407, 400) carry no
//     X-Vigil-Verdict.
//   - A client that goes away mid-response leaves trust unchanged; so does
//     an upstream failure (unreachable, a 502, 503 or 504 answer, the
//     host's breaker open), which is counted in the agent's state
//     (AgentStatus.UpstreamFailures, "upstream_failures" in the API).
//
// Caveats: only the first 256 KiB of a body are inspected (an MCP message
// larger than that does not parse and is governed as a plain POST); the
// per-host breakers are kept for every host the process has called.
package proxy
