// Package ledger keeps the behaviour ledger: one hash-chained chain of
// entries per agent, each entry a self-contained record of one governance
// decision (API.md section 8), written before the decision takes effect.
//
// The nouns: Ledger appends decisions and reads, traces, verifies and
// exports chains; Entry is one decoded entry; Record is one stored entry
// (its canonical bytes and the facts a store indexes); Store is where records
// live — FileStore (embedded, the default) and RedisStore (shared by many
// sidecars), or any implementation that passes ledgertest.Run; Report and
// VerifyError are the results of verification.
//
// # The chain
//
// Entries of an agent are numbered from 1 without gaps. An entry's hash is
// the lowercase hex SHA-256 of the RFC 8785 (JCS) canonical JSON of the entry
// without its "hash" member; prev_hash is the previous entry's hash, and 64
// zeros for entry 1. A Record's Body is exactly that canonical JSON, so the
// stored bytes are the hashed bytes. Integers in action parameters beyond
// 2^53 are recorded as decimal strings, so the hashed content says exactly
// what was sent. Anyone can verify an export (VerifyStream, `vigil ledger
// verify-file`) with the written rule alone.
//
// Verification detects any change to, removal of, or reordering of entries
// within a chain. Like every hash chain it cannot by itself detect the
// removal of the newest entries: compare the reported head hash with one
// kept elsewhere for that.
//
// # Appending
//
// Append assembles the entry, canonicalizes it once with placeholders for
// sequence and prev_hash, and lets the store seal it on the head it holds
// (splicing in the two values and hashing), so a store shared by several
// writers can rebuild an entry on a moved head without re-encoding it.
//
// Append returns the record without its Body: with the file store, every
// entry is sealed into one reused buffer, which the store copies into its
// write before Append returns (Get reads an entry back).
//
// Causal links name earlier entries by sequence; a link whose decision is not
// in the ledger (a dry run, or an entry of another process not seen here)
// has sequence 0.
package ledger
