// Command vigil is the Vigil governance sidecar and its command-line client.
//
//	vigil serve [flags]     start the forward proxy and the admin API
//	vigil ledger ...        read, verify and export ledger chains from a server
//	vigil control ...       issue, list, show and expire directives
//	vigil approvals ...     list, approve and deny held calls
//	vigil ledger verify-file FILE   verify an exported chain offline
//	vigil ca init --out DIR create the HTTPS interception CA
//	vigil version           print the version
//
// This package is the only composition root: it reads flags, the YAML
// configuration (config*.go, the versioned DTO of shared/design/API.md
// section 7) and the environment (VIGIL_API_KEY, VIGIL_REDIS_URL, OTEL_*),
// builds every component and wires them together, and owns the shutdown
// order. No other package reads flags or the environment.
package main
