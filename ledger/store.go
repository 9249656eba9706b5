package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// ZeroHash is the prev_hash of an agent's first entry.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Sentinel errors.
var (
	// ErrNotFound: no such agent chain or sequence.
	ErrNotFound = errors.New("ledger: not found")
	// ErrChainBroken: a chain does not verify (see *VerifyError).
	ErrChainBroken = errors.New("ledger: chain broken")
	// ErrClosed: the ledger or store is closed.
	ErrClosed = errors.New("ledger: closed")
	// ErrHeadMoved: another writer appended first; the append must be
	// rebuilt on the new head (stores retry this themselves).
	ErrHeadMoved = errors.New("ledger: head moved")
	// ErrCorrupt: stored data is damaged in a way that is not a torn tail.
	ErrCorrupt = errors.New("ledger: store corrupt")
	// ErrUnavailable: the store's backend could not be reached (Redis down,
	// a timeout, its circuit breaker open). Whether an append that fails
	// with it was stored is unknown. A Ledger with a Spool keeps the entry
	// locally instead; a custom Store should wrap it for the same cases.
	ErrUnavailable = errors.New("ledger: store unavailable")
)

// Head is the end of an agent's chain: the last sequence and its hash. The
// head of an empty chain is {0, ZeroHash}.
type Head struct {
	Sequence int64
	Hash     string
}

// Record is one stored entry: the canonical JSON (RFC 8785) of the entry
// without its hash field, and the facts a store indexes. Hash is the
// lowercase hex SHA-256 of Body.
type Record struct {
	AgentID  string
	Sequence int64
	PrevHash string
	Hash     string
	// Verdict is the entry's decision (ALLOW, DENY, ...), for filtering.
	Verdict string
	// ActionID is the entry's action id, for resolving causal links.
	ActionID string
	// Body is the canonical JSON of the entry without "hash".
	Body []byte
	// Spooled is set only on a record Ledger.Append returns for an entry
	// kept in its Spool because the store was unavailable: Sequence,
	// PrevHash and Hash are then empty, since they are set when the entry
	// is replayed into the store.
	Spooled bool
}

// JSON returns the entry as it is exported: Body with the "hash" member
// added as the last member. Verifiers remove "hash" and canonicalize.
func (r *Record) JSON() []byte {
	out := make([]byte, 0, len(r.Body)+len(r.Hash)+10)
	out = append(out, r.Body[:len(r.Body)-1]...)
	out = append(out, `,"hash":"`...)
	out = append(out, r.Hash...)
	return append(out, `"}`...)
}

// Store keeps the agents' chains. It is the pluggable part of the ledger
// (the seed's "custom ledger store"): the embedded file store and the Redis
// store implement it, and an embedding program may supply its own. Every
// implementation must pass the conformance suite in ledger/ledgertest.
//
// Append is atomic per agent: build is called with the agent's current head
// and returns the record to store, whose Sequence must be head.Sequence+1 and
// PrevHash head.Hash. A store shared by several writers calls build again
// when another writer moved the head first, so that a chain never forks and
// never has a gap. Append returns once the record is as durable as the
// store's mode promises; the returned record is the one stored.
type Store interface {
	Append(ctx context.Context, agentID string, build func(Head) (*Record, error)) (*Record, error)
	// Head returns the agent's head ({0, ZeroHash} for an agent without
	// entries).
	Head(ctx context.Context, agentID string) (Head, error)
	// Get returns one record, or ErrNotFound.
	Get(ctx context.Context, agentID string, seq int64) (*Record, error)
	// Range calls fn for the records from..to (inclusive), oldest first,
	// stopping at the first error fn returns (which Range returns). fn may
	// keep the records but must not modify them: their bodies may share
	// memory (FileStore reads adjacent records into one buffer).
	Range(ctx context.Context, agentID string, from, to int64, fn func(*Record) error) error
	// Latest returns up to limit records, newest first; with verdict set,
	// only records with that verdict.
	Latest(ctx context.Context, agentID, verdict string, limit int) ([]*Record, error)
	// Agents lists the agents that have at least one entry, sorted.
	Agents(ctx context.Context) ([]string, error)
	// Close releases the store; pending appends finish or fail first.
	Close() error
}

// checkLink reports whether rec may follow head.
func checkLink(head Head, rec *Record) error {
	if rec.Sequence != head.Sequence+1 {
		return fmt.Errorf("ledger: record sequence %d does not follow head %d", rec.Sequence, head.Sequence)
	}
	if rec.PrevHash != head.Hash {
		return fmt.Errorf("ledger: record %d prev_hash does not match the head's hash", rec.Sequence)
	}
	return nil
}

// hashHex is the lowercase hex SHA-256 of b.
func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
