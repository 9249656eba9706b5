// Package toolcall turns an agent's outbound HTTP request into the actions the
// governor evaluates (API.md section 4), and filters the tools/list answers
// an agent sees.
//
// The nouns: Request is what Parse needs of an HTTP request; Call is the
// parsed request, made of Messages, each of which carries a governor.Action
// or none (protocol traffic, forwarded without a decision); Route is one
// route rule (API.md section 7) and Rules an immutable, validated list of
// them, the first match winning; Modification is what a route's MODIFY
// changes in a forwarded request.
//
// # Parsing
//
// A POST whose body is a JSON-RPC 2.0 message or a non-empty batch of them is
// MCP (KindMCP, one Message per JSON-RPC message): tools/call, resources/read
// and prompts/get are actions; every other method and every response sent by
// the client is protocol traffic, and so are a GET or DELETE carrying an
// Mcp-Session-Id. Any other request is plain HTTP (KindHTTP, one action): a
// route rule first, else the type from the method; parameters from the query
// and from a JSON object (or URL-encoded form) body, the body winning on a
// clash. A CONNECT that is not intercepted is KindConnect. JSON numbers are
// float64, as the governor's CEL rules compare them (one beyond the range of
// a float64 stays its text, so a rule comparing it fails closed); query and
// form values are strings, an []any of strings when repeated.
//
// A body that is not valid JSON-RPC 2.0 — invalid JSON, other JSON, a
// tools/call without a string params.name, an empty batch, a batch with one
// bad message — is governed as a plain POST, never passed through. So is a
// message holding a member that a lenient JSON reader could take for one we
// read ("Method" beside "method"): we do not guess which one the server reads.
// What follows the first JSON value of a body is ignored, as a streaming
// decoder ignores it.
//
// Targets name an origin one way: the host in lower case without a trailing
// dot or the scheme's default port, then the path with "." and ".." segments
// and repeated slashes removed.
//
// # Invariants
//
// The package is pure: no I/O, no goroutines, no package-level mutable state;
// Parse never fails and never panics. Call.Messages is never empty; every
// action has a type and non-nil parameters. Nothing returned aliases
// Request.Body.
//
// # Caveats
//
// Only the first InspectLimit (256 KiB) bytes of a body are inspected; the
// whole body is forwarded. A body beyond that is governed as far as it was
// inspected: a JSON body cut short does not parse, so an MCP message over
// 256 KiB is governed as a plain POST (the route's type, else "create"; no
// body parameters), and a form body cut short loses its last, possibly partial, pair.
//
// The Mcp-Session-Id passthrough trusts the header: any GET or DELETE that
// carries one is forwarded without a decision. The proxy should check the
// session against those its upstream issued at that endpoint (host and path),
// and parse the request again without SessionID when it is unknown.
//
// Tool arguments are kept as sent, keys in their case: a server that reads
// them case-insensitively may see "Amount" where a rule checks "amount".
//
// # Filtering tools/list
//
// FilterToolsList drops the tools an agent may not call from a tools/list
// result, byte for byte otherwise; NewToolsListFilter does the same to each
// event of an event stream as it passes. Filtering shapes what the agent is
// offered; it is not enforcement (every tools/call is still evaluated), so
// an event too large to hold (8 MiB) passes unfiltered.
package toolcall
