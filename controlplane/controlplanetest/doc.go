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
package controlplanetest
