// Package ledgertest is the conformance suite of ledger.Store: every
// backend (the embedded file store, the Redis store, and any store an
// embedding program supplies) runs Run from its tests and must pass it.
//
// The suite covers append and read, links (a record that does not follow the
// head is refused and nothing changes), ranges, newest-first listing with a
// verdict filter, the list of agents, concurrent appenders on one agent and
// on many (no fork, no gap), reopening (everything acknowledged is still
// there and appends continue), and closing.
package ledgertest
