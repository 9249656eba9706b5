package wire

import (
	"encoding/json"

	"github.com/vigilhq/vigil/ledger"
)

// Ledger entries travel as the bytes the ledger stored (ledger.Record.JSON:
// the RFC 8785 canonical entry with its "hash" member appended), never
// decoded and re-encoded, so that an entry a client receives verifies with
// the published hash rule. The envelopes below hold them as
// json.RawMessage; a server must encode them without HTML escaping
// (json.Encoder.SetEscapeHTML(false)) to keep the bytes as stored.

// LedgerEntries is the body of GET /v1/ledger/{agent_id}: entries of one
// agent, newest first.
type LedgerEntries struct {
	AgentID string            `json:"agent_id"`
	Entries []json.RawMessage `json:"entries"`
}

// LedgerTrace is the body of GET /v1/ledger/{agent_id}/trace/{sequence}:
// the entry, then the entries its causal links lead to, breadth first.
type LedgerTrace struct {
	AgentID  string            `json:"agent_id"`
	Sequence int64             `json:"sequence"`
	Chain    []json.RawMessage `json:"chain"`
}

// LedgerReport is the body of GET /v1/ledger/{agent_id}/verify: the result
// of recomputing every hash and link of the agent's chain. Entries and
// HeadSequence count the entries verified before the first invalid one (all
// of them when Valid); HeadHash is the hash of the last verified entry (64
// zeros for none). FirstInvalidSequence is 0 and Reason "" when Valid.
type LedgerReport struct {
	AgentID              string `json:"agent_id"`
	Valid                bool   `json:"valid"`
	Entries              int64  `json:"entries"`
	HeadSequence         int64  `json:"head_sequence"`
	HeadHash             string `json:"head_hash"`
	FirstInvalidSequence int64  `json:"first_invalid_sequence"`
	Reason               string `json:"reason"`
}

// NewLedgerRef points at the entry rec.
func NewLedgerRef(rec *ledger.Record) *LedgerRef {
	return &LedgerRef{AgentID: rec.AgentID, Sequence: rec.Sequence, Spooled: rec.Spooled}
}

// NewLedgerEntries builds the list body of agentID's records (never null).
func NewLedgerEntries(agentID string, recs []*ledger.Record) LedgerEntries {
	return LedgerEntries{AgentID: agentID, Entries: rawEntries(recs)}
}

// NewLedgerTrace builds the trace body of the entry seq of agentID.
func NewLedgerTrace(agentID string, seq int64, recs []*ledger.Record) LedgerTrace {
	return LedgerTrace{AgentID: agentID, Sequence: seq, Chain: rawEntries(recs)}
}

// NewLedgerReport converts a verification report.
func NewLedgerReport(r ledger.Report) LedgerReport {
	return LedgerReport{
		AgentID:              r.AgentID,
		Valid:                r.Valid,
		Entries:              r.Entries,
		HeadSequence:         r.HeadSeq,
		HeadHash:             r.HeadHash,
		FirstInvalidSequence: r.FirstInvalid,
		Reason:               r.Reason,
	}
}

func rawEntries(recs []*ledger.Record) []json.RawMessage {
	out := make([]json.RawMessage, len(recs))
	for i, r := range recs {
		out[i] = r.JSON()
	}
	return out
}
