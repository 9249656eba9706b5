// Package controlplanetest is the conformance suite of controlplane.Store:
// every backend (the embedded FileStore, the MemoryStore, the Redis store,
// and any store an embedding program supplies) runs Run from its tests and
// must pass it.
//
// The suite covers an empty store, saving and loading directives (every
// field survives), replacing a directive by id, provenance events (newest
// first, filters by context code, actor and target, limits, details), many
// concurrent writers, and reopening (everything written is still there, and
// writing continues after it).
//
// RunApprovals is the suite of controlplane.ApprovalStore: creating and
// reading approvals (every field survives; a taken id is ErrConflict),
// deciding once (a second decision is ErrConflict, an unknown id
// ErrNotFound), listing by status newest first with a limit, concurrent
// deciders of one approval (exactly one wins, the others get ErrConflict),
// concurrent creators, and reopening.
package controlplanetest
