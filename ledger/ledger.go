package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/vigilhq/vigil/governor"
)

// Ledger records governance decisions as hash-chained entries and reads
// them back. It is safe for concurrent use; its persistence is a Store.
type Ledger struct {
	store Store
	enc   canonEncoder // writes entries; keeps its plans of their types
	bufs  sync.Pool    // *encodeBufs, reused between appends

	spool  *Spool   // nil: appends fail when the store does
	replay replayer // with a spool: replays its entries into the store

	mu     sync.Mutex
	recent map[string]*recentIDs // per agent: action id → sequence
}

// recentIDs remembers the last few action ids of an agent and their
// sequences, to resolve causal links without a store lookup.
type recentIDs struct {
	ids  [64]string
	seqs [64]int64
	next int
}

// New returns a ledger over store, without a spool.
func New(store Store) *Ledger {
	return NewWithOptions(store, Options{})
}

// NewWithOptions returns a ledger over store configured by o. With a spool
// it starts the replayer; Close stops it.
func NewWithOptions(store Store, o Options) *Ledger {
	l := &Ledger{store: store, recent: map[string]*recentIDs{}, spool: o.Spool}
	if l.spool != nil {
		l.replay.start(l, o)
	}
	return l
}

// Store returns the ledger's store.
func (l *Ledger) Store() Store { return l.store }

// Append records a decision as the next entry of its agent's chain and
// returns the stored record without its Body (Get reads the entry back).
// It returns only once the entry is as durable as the store promises: the
// caller may then act on the decision.
func (l *Ledger) Append(ctx context.Context, d *governor.Decision) (*Record, error) {
	bufs, _ := l.bufs.Get().(*encodeBufs)
	if bufs == nil {
		bufs = &encodeBufs{}
	}
	defer l.bufs.Put(bufs)
	defer bufs.entry.release()
	assembleInto(&bufs.entry, d, func(actionID string) int64 { return l.resolve(ctx, d.AgentID, actionID) })
	t, err := newTemplate(&l.enc, &bufs.entry, bufs)
	if err != nil {
		return nil, err
	}
	if l.spool != nil {
		return l.appendSpooling(ctx, t)
	}
	if _, ok := l.store.(bodyBorrower); ok {
		t.into = &bufs.sealed // the store is done with the body when Append returns
	}
	rec, err := l.store.Append(ctx, d.AgentID, t.seal)
	if err != nil {
		return nil, err
	}
	l.remember(d.AgentID, d.ActionID, rec.Sequence)
	out := *rec
	out.Body = nil
	return &out, nil
}

// bodyBorrower is a store of this package that reads a record's Body only
// until its Append returns (it copies what it keeps), so the ledger may seal
// every entry into the same buffer. Other stores get a body of their own.
type bodyBorrower interface {
	borrowsBody()
}

func (l *Ledger) remember(agentID, actionID string, seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.recent[agentID]
	if r == nil {
		r = &recentIDs{}
		l.recent[agentID] = r
	}
	r.ids[r.next], r.seqs[r.next] = actionID, seq
	r.next = (r.next + 1) % len(r.ids)
}

// resolve finds the sequence of an earlier action of the agent: in the
// recent ids, else at the head of the chain; 0 when it is not in the ledger.
func (l *Ledger) resolve(ctx context.Context, agentID, actionID string) int64 {
	l.mu.Lock()
	if r := l.recent[agentID]; r != nil {
		for i, id := range r.ids {
			if id == actionID {
				l.mu.Unlock()
				return r.seqs[i]
			}
		}
	}
	l.mu.Unlock()
	if recs, err := l.store.Latest(ctx, agentID, "", 1); err == nil && len(recs) == 1 && recs[0].ActionID == actionID {
		return recs[0].Sequence
	}
	return 0
}

// template is an entry's canonical body with the positions of the values of
// prev_hash and sequence, which are only known once the head is: sealing
// splices them in (canonical JSON stays canonical when a hex string and a
// small integer are replaced by others) and hashes the result.
type template struct {
	agentID, verdict, actionID string
	body                       []byte
	into                       *[]byte // nil: seal allocates the record's body
	prevStart, prevEnd         int     // the quoted prev_hash value
	seqStart, seqEnd           int     // the sequence value
}

// encodeBufs are the scratch buffers of one append; the template's body
// lives in canon until the append returns (seal copies it), and so does the
// sealed body when the store borrows it.
type encodeBufs struct {
	canon  []byte
	enc    canonState
	entry  entryOut
	tmpl   template
	sealed []byte
}

// newTemplate writes the canonical body of e with enc: exactly
// Canonicalize(json.Marshal(e)), in one pass.
func newTemplate(enc *canonEncoder, e *entryOut, bufs *encodeBufs) (*template, error) {
	e.Sequence, e.PrevHash = 0, ZeroHash
	body, err := enc.appendValue(bufs.canon[:0], e, &bufs.enc)
	if err != nil {
		return nil, fmt.Errorf("ledger: encoding the entry: %w", err)
	}
	bufs.canon = body
	t := &bufs.tmpl
	*t = template{agentID: e.AgentID, verdict: e.Verdict.Decision, actionID: e.ActionID, body: body}
	// The encoder knows where it wrote the two values of a struct.
	var ok1, ok2 bool
	t.prevStart, t.prevEnd, ok1 = bufs.enc.member("prev_hash")
	t.seqStart, t.seqEnd, ok2 = bufs.enc.member("sequence")
	if !ok1 || !ok2 {
		t.prevStart, t.prevEnd, ok1 = topLevelValue(body, "prev_hash")
		t.seqStart, t.seqEnd, ok2 = topLevelValue(body, "sequence")
	}
	if !ok1 || !ok2 || t.prevEnd >= t.seqStart || body[t.prevStart] != '"' {
		return nil, errors.New("ledger: canonical entry lacks prev_hash or sequence")
	}
	return t, nil
}

// seal builds the record that follows head.
func (t *template) seal(head Head) (*Record, error) {
	seq := head.Sequence + 1
	var b []byte
	if t.into != nil {
		b = slices.Grow((*t.into)[:0], len(t.body)+64+20)
		defer func() { *t.into = b }()
	} else {
		b = make([]byte, 0, len(t.body)+64+20)
	}
	b = append(b, t.body[:t.prevStart]...)
	b = append(b, '"')
	b = append(b, head.Hash...)
	b = append(b, '"')
	b = append(b, t.body[t.prevEnd:t.seqStart]...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, t.body[t.seqEnd:]...)
	return &Record{AgentID: t.agentID, Sequence: seq, PrevHash: head.Hash, Hash: hashHex(b),
		Verdict: t.verdict, ActionID: t.actionID, Body: b}, nil
}

// Get returns one entry's record.
func (l *Ledger) Get(ctx context.Context, agentID string, seq int64) (*Record, error) {
	return l.store.Get(ctx, agentID, seq)
}

// Latest returns the agent's newest entry, or ErrNotFound.
func (l *Ledger) Latest(ctx context.Context, agentID string) (*Record, error) {
	recs, err := l.store.Latest(ctx, agentID, "", 1)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no entries for agent %q", ErrNotFound, agentID)
	}
	return recs[0], nil
}

// List returns up to limit entries of the agent, newest first, only those
// with the verdict when it is set.
func (l *Ledger) List(ctx context.Context, agentID, verdict string, limit int) ([]*Record, error) {
	return l.store.Latest(ctx, agentID, verdict, limit)
}

// Head returns the agent's head.
func (l *Ledger) Head(ctx context.Context, agentID string) (Head, error) {
	return l.store.Head(ctx, agentID)
}

// Agents lists the agents with entries.
func (l *Ledger) Agents(ctx context.Context) ([]string, error) { return l.store.Agents(ctx) }

// Decode parses a record into an Entry (with its hash).
func Decode(rec *Record) (*Entry, error) {
	var e Entry
	if err := json.Unmarshal(rec.JSON(), &e); err != nil {
		return nil, fmt.Errorf("ledger: decoding entry %d of %s: %w", rec.Sequence, rec.AgentID, err)
	}
	return &e, nil
}

// Trace returns the causal chain of an entry (get_causal_chain): the entry,
// then the entries its causal links point to, breadth first, each once, at
// most depth entries.
func (l *Ledger) Trace(ctx context.Context, agentID string, seq int64, depth int) ([]*Record, error) {
	first, err := l.store.Get(ctx, agentID, seq)
	if err != nil {
		return nil, err
	}
	out := []*Record{first}
	seen := map[int64]bool{seq: true}
	for i := 0; i < len(out) && len(out) < depth; i++ {
		e, err := Decode(out[i])
		if err != nil {
			return nil, err
		}
		for _, link := range e.CausalLinks {
			if link.Sequence <= 0 || link.Sequence >= out[i].Sequence || seen[link.Sequence] || len(out) >= depth {
				continue
			}
			rec, err := l.store.Get(ctx, agentID, link.Sequence)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			seen[link.Sequence] = true
			out = append(out, rec)
		}
	}
	return out, nil
}

// Narrative returns the plain-text account of one entry.
func (l *Ledger) Narrative(ctx context.Context, agentID string, seq int64) (string, error) {
	rec, err := l.store.Get(ctx, agentID, seq)
	if err != nil {
		return "", err
	}
	e, err := Decode(rec)
	if err != nil {
		return "", err
	}
	return Narrative(e), nil
}

// Export writes the agent's chain as JSON Lines, oldest first: one entry,
// with its hash, per line.
func (l *Ledger) Export(ctx context.Context, agentID string, w io.Writer) error {
	h, err := l.store.Head(ctx, agentID)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	err = l.store.Range(ctx, agentID, 1, h.Sequence, func(r *Record) error {
		if _, err := bw.Write(r.JSON()); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}
