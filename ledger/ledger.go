package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
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

// Report is the result of verifying a chain.
type Report struct {
	AgentID  string `json:"agent_id"`
	Valid    bool   `json:"valid"`
	Entries  int64  `json:"entries"`
	HeadSeq  int64  `json:"head_sequence"`
	HeadHash string `json:"head_hash"`
	// FirstInvalid is the first sequence that does not verify (0: none).
	FirstInvalid int64  `json:"first_invalid_sequence"`
	Reason       string `json:"reason"`
}

// VerifyError names the first entry of a chain that does not verify. It
// matches ErrChainBroken with errors.Is.
type VerifyError struct {
	AgentID  string
	Sequence int64
	Reason   string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("ledger: chain of %s broken at sequence %d: %s", e.AgentID, e.Sequence, e.Reason)
}

// Is reports whether target is ErrChainBroken.
func (e *VerifyError) Is(target error) bool { return target == ErrChainBroken }

// Verify recomputes every hash of the agent's chain and checks every link.
// A broken chain gives a Report with Valid false and a *VerifyError; other
// errors are failures to read.
func (l *Ledger) Verify(ctx context.Context, agentID string) (Report, error) {
	h, err := l.store.Head(ctx, agentID)
	if err != nil {
		return Report{}, err
	}
	v := newVerifier(agentID)
	batch := make([]*Record, 0, verifyBatch)
	err = l.store.Range(ctx, agentID, 1, h.Sequence, func(r *Record) error {
		if batch = append(batch, r); len(batch) == verifyBatch {
			err := v.checkRecords(batch)
			batch = batch[:0]
			return err
		}
		return nil
	})
	if err == nil {
		err = v.checkRecords(batch)
	}
	if err == nil && v.next-1 != h.Sequence {
		err = v.fail(v.next, "entries are missing before the head")
	}
	return v.report(err)
}

// verifyBatch is how many stored records Verify hashes at a time.
const verifyBatch = 256

// checkRecords verifies stored records in chain order. The hashes, the
// costly part, are computed on every core; the links are then checked one
// after the other.
func (v *verifier) checkRecords(recs []*Record) error {
	if len(recs) == 0 {
		return nil
	}
	ok := make([]bool, len(recs))
	at := make([]bodyLinks, len(recs))
	workers := min(runtime.GOMAXPROCS(0), len(recs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(recs); i += workers {
				ok[i] = recs[i].Hash == hashHex(recs[i].Body)
				at[i] = findLinks(recs[i].Body)
			}
		}()
	}
	wg.Wait()
	for i, r := range recs {
		if !ok[i] {
			return v.fail(r.Sequence, "the hash is not the SHA-256 of the entry")
		}
		if r.Sequence != v.next || r.PrevHash != v.prev {
			return v.fail(v.next, "the stored link does not follow the previous entry")
		}
		if err := v.checkLinks(r.Sequence, r.Body, at[i], r.Hash); err != nil {
			return err
		}
	}
	return nil
}

// VerifyStream verifies an exported chain (JSON Lines, oldest first) with
// the published rule alone: every entry's hash is the SHA-256 of the RFC 8785
// canonical JSON of the entry without "hash", the first entry has sequence 1
// and a prev_hash of 64 zeros, and every later one follows its predecessor.
func VerifyStream(r io.Reader) (Report, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var v *verifier
	var canon []byte
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var err error
		canon, err = Canonicalize(canon[:0], raw)
		if err != nil || len(canon) == 0 || canon[0] != '{' {
			return failedReport(v, fmt.Sprintf("line %d is not a JSON entry valid for RFC 8785: %v", line, err))
		}
		agentID, seq, ok := entryHead(canon)
		if !ok {
			return failedReport(v, fmt.Sprintf("line %d lacks a string agent_id or an integer sequence", line))
		}
		if v == nil {
			v = newVerifier(agentID)
		}
		if agentID != v.agentID {
			return v.report(v.fail(v.next, fmt.Sprintf("line %d belongs to agent %q, not %q", line, agentID, v.agentID)))
		}
		hs, he, ok := topLevelValue(canon, "hash")
		if !ok || he-hs != 66 {
			return v.report(v.fail(v.next, fmt.Sprintf("line %d has no 64-digit hash", line)))
		}
		hash := string(canon[hs+1 : he-1])
		body := withoutMember(canon, hs, he)
		if hashHex(body) != hash {
			return v.report(v.fail(v.next, "the hash is not the SHA-256 of the canonical entry"))
		}
		if err := v.checkBody(seq, body, hash); err != nil {
			return v.report(err)
		}
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("ledger: reading the export: %w", err)
	}
	if v == nil {
		return Report{Valid: true, HeadHash: ZeroHash}, nil
	}
	return v.report(nil)
}

// entryHead reads agent_id and sequence from a canonical entry.
func entryHead(canon []byte) (agentID string, seq int64, ok bool) {
	as, ae, ok1 := topLevelValue(canon, "agent_id")
	ss, se, ok2 := topLevelValue(canon, "sequence")
	if !ok1 || !ok2 {
		return "", 0, false
	}
	var err error
	if agentID, err = strconv.Unquote(string(canon[as:ae])); err != nil {
		if json.Unmarshal(canon[as:ae], &agentID) != nil {
			return "", 0, false
		}
	}
	if seq, err = strconv.ParseInt(string(canon[ss:se]), 10, 64); err != nil {
		return "", 0, false
	}
	return agentID, seq, true
}

// withoutMember removes the top-level member whose value is canon[vs:ve]
// (its name, colon and one adjacent comma) from a canonical object.
func withoutMember(canon []byte, vs, ve int) []byte {
	ks := bytes.LastIndexByte(canon[:vs-1], '"') // the opening quote of the name
	ks = bytes.LastIndexByte(canon[:ks], '"')
	start, end := ks, ve
	if canon[end] == ',' {
		end++
	} else if canon[start-1] == ',' {
		start--
	}
	out := make([]byte, 0, len(canon)-(end-start))
	out = append(out, canon[:start]...)
	return append(out, canon[end:]...)
}

// verifier walks a chain in order.
type verifier struct {
	agentID string
	next    int64
	prev    string
}

func newVerifier(agentID string) *verifier {
	return &verifier{agentID: agentID, next: 1, prev: ZeroHash}
}

func (v *verifier) fail(seq int64, reason string) error {
	return &VerifyError{AgentID: v.agentID, Sequence: seq, Reason: reason}
}

// checkBody checks the sequence and prev_hash written inside a canonical
// body against the chain so far, then advances.
func (v *verifier) checkBody(seq int64, body []byte, hash string) error {
	return v.checkLinks(seq, body, findLinks(body), hash)
}

// bodyLinks locates the top-level prev_hash and sequence values of a
// canonical body (ok false when either is missing).
type bodyLinks struct {
	ps, pe, ss, se int
	ok             bool
}

// findLinks walks a canonical body once: "sequence" sorts after "prev_hash".
func findLinks(body []byte) bodyLinks {
	var l bodyLinks
	var ok bool
	if l.ps, l.pe, ok = topLevelValue(body, "prev_hash"); ok && l.pe < len(body) && body[l.pe] == ',' {
		l.ss, l.se, l.ok = topLevelValueAt(body, l.pe+1, "sequence")
	}
	return l
}

// checkLinks is checkBody with the values already located.
func (v *verifier) checkLinks(seq int64, body []byte, at bodyLinks, hash string) error {
	if !at.ok {
		return v.fail(v.next, "the entry lacks sequence or prev_hash")
	}
	ps, pe, ss, se := at.ps, at.pe, at.ss, at.se
	if got := string(body[ss:se]); got != strconv.FormatInt(v.next, 10) || seq != v.next {
		return v.fail(v.next, fmt.Sprintf("expected sequence %d, found %s", v.next, got))
	}
	if string(body[ps:pe]) != `"`+v.prev+`"` {
		return v.fail(v.next, "prev_hash is not the previous entry's hash")
	}
	v.next, v.prev = v.next+1, hash
	return nil
}

func (v *verifier) report(err error) (Report, error) {
	r := Report{AgentID: v.agentID, Valid: err == nil, Entries: v.next - 1, HeadSeq: v.next - 1, HeadHash: v.prev}
	var ve *VerifyError
	if errors.As(err, &ve) {
		r.FirstInvalid, r.Reason = ve.Sequence, ve.Reason
		return r, err
	}
	return r, err
}

func failedReport(v *verifier, reason string) (Report, error) {
	if v == nil {
		v = newVerifier("")
	}
	return v.report(v.fail(v.next, reason))
}
