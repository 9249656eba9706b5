// Package admin serves Vigil's admin API under /v1: infrastructure (health,
// info, the OpenAPI document), evaluation and the playground, agents and
// their contracts, and archetypes. It owns the HTTP router (Gin), API keys
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
//     also evaluate and the playground, admin everything (PUT agents). Keys
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
//   - Every response is application/json; charset=utf-8.
//
// Caveats: Gin's mode is process-global. In debug mode (Gin's default outside
// tests when GIN_MODE is unset) Gin itself prints a warning and the route
// table to stdout when New builds the router; this package does not change
// the global mode.
package admin
