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
	"strconv"
)

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
	return l.verify(ctx, agentID, verifyBatch, 2*runtime.GOMAXPROCS(0))
}

// verify is Verify hashing batches of batch records, with at most depth
// of them in flight.
func (l *Ledger) verify(ctx context.Context, agentID string, batch, depth int) (Report, error) {
	h, err := l.store.Head(ctx, agentID)
	if err != nil {
		return Report{}, err
	}
	v := newVerifier(agentID)
	p := &inOrder[storedEntry]{batch: batch, depth: depth, work: hashStored, check: v.checkStored}
	err = l.store.Range(ctx, agentID, 1, h.Sequence, func(r *Record) error { return p.add(storedEntry{rec: r}) })
	if err == nil {
		err = p.finish()
	}
	p.abandon()
	if err == nil && v.next-1 != h.Sequence {
		err = v.fail(v.next, "entries are missing before the head")
	}
	return v.report(err)
}

// verifyBatch is how many stored records Verify hashes as one unit, and
// streamBatch how many lines of an export VerifyStream canonicalizes as one.
const (
	verifyBatch = 256
	streamBatch = 64
)

// storedEntry is a stored record and, once hashed, whether its hash is
// the SHA-256 of its body and where its links are.
type storedEntry struct {
	rec *Record
	ok  bool
	at  bodyLinks
}

// hashStored is the costly part of verifying stored entries.
func hashStored(es []storedEntry) {
	for i := range es {
		es[i].ok = es[i].rec.Hash == hashHex(es[i].rec.Body)
		es[i].at = findLinks(es[i].rec.Body)
	}
}

// checkStored checks hashed stored entries in chain order.
func (v *verifier) checkStored(es []storedEntry) error {
	for _, e := range es {
		r := e.rec
		switch {
		case !e.ok:
			return v.fail(r.Sequence, "the hash is not the SHA-256 of the entry")
		case r.Sequence != v.next || r.PrevHash != v.prev:
			return v.fail(v.next, "the stored link does not follow the previous entry")
		}
		if err := v.checkLinks(r.Sequence, r.Body, e.at, r.Hash); err != nil {
			return err
		}
	}
	return nil
}

// inOrder runs work on batches of items, each batch on a goroutine of its
// own while the caller goes on adding items, and check on the batches in
// the order they were added, on the caller's goroutine: the costly,
// independent part of verifying a chain on every core while it is read,
// and the links, which depend on the previous entry, one after the other.
// At most depth batches are in flight, so memory stays bounded whatever
// the chain's length. The caller calls finish after the last item, and
// abandon before returning in every case, so that no goroutine outlives it.
type inOrder[T any] struct {
	batch   int             // items per batch
	depth   int             // batches in flight at most
	work    func([]T)       // fills in each item's results
	check   func([]T) error // the first error ends the pipeline
	cur     []T
	pending []*workBatch[T] // in order
}

// workBatch is a batch of items whose work is done once done is closed.
type workBatch[T any] struct {
	items []T
	done  chan struct{}
}

// add takes the next item. It returns the first error check found in the
// batches checked so far.
func (p *inOrder[T]) add(item T) error {
	if p.cur = append(p.cur, item); len(p.cur) < p.batch {
		return nil
	}
	p.submit()
	for len(p.pending) > p.depth {
		if err := p.checkOldest(); err != nil {
			return err
		}
	}
	return nil
}

// finish works the last partial batch and checks everything in flight.
func (p *inOrder[T]) finish() error {
	p.submit()
	for len(p.pending) > 0 {
		if err := p.checkOldest(); err != nil {
			return err
		}
	}
	return nil
}

// abandon waits for the batches in flight without checking them.
func (p *inOrder[T]) abandon() {
	for _, b := range p.pending {
		<-b.done
	}
	p.pending = nil
}

func (p *inOrder[T]) submit() {
	if len(p.cur) == 0 {
		return
	}
	b := &workBatch[T]{items: p.cur, done: make(chan struct{})}
	p.cur = make([]T, 0, p.batch)
	p.pending = append(p.pending, b)
	go func() {
		defer close(b.done)
		p.work(b.items)
	}()
}

// checkOldest waits for the oldest batch in flight and checks it.
func (p *inOrder[T]) checkOldest() error {
	b := p.pending[0]
	p.pending = p.pending[1:]
	<-b.done
	return p.check(b.items)
}

// VerifyStream verifies an exported chain (JSON Lines, oldest first) with
// the published rule alone: every entry's hash is the SHA-256 of the RFC 8785
// canonical JSON of the entry without "hash", the first entry has sequence 1
// and a prev_hash of 64 zeros, and every later one follows its predecessor.
func VerifyStream(r io.Reader) (Report, error) {
	return verifyStream(r, streamBatch, 2*runtime.GOMAXPROCS(0))
}

// verifyStream is VerifyStream canonicalizing batches of batch lines, with
// at most depth of them in flight.
func verifyStream(r io.Reader, batch, depth int) (Report, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	v := newVerifier("") // the agent is the first entry's
	p := &inOrder[exportLine]{batch: batch, depth: depth, work: canonicalLines, check: v.checkLines}
	var err error
	for n := 1; err == nil && sc.Scan(); n++ {
		if raw := bytes.TrimSpace(sc.Bytes()); len(raw) > 0 {
			err = p.add(exportLine{n: n, raw: bytes.Clone(raw)})
		}
	}
	if err == nil {
		err = p.finish()
	}
	p.abandon()
	if rerr := sc.Err(); err == nil && rerr != nil {
		return Report{}, fmt.Errorf("ledger: reading the export: %w", rerr)
	}
	return v.report(err)
}

// exportLine is a line of an export and, once canonicalized, either why it
// is not an entry or its head, hash and links.
type exportLine struct {
	n     int // line number
	raw   []byte
	fault string // the line is not an entry of the chain: the reason

	agentID string
	seq     int64
	hash    string // "": no 64-digit hash
	hashOK  bool   // hash is the SHA-256 of body
	body    []byte // the canonical entry without "hash"
	at      bodyLinks
}

// canonicalLines is the costly part of verifying an export.
func canonicalLines(ls []exportLine) {
	var canon []byte
	for i := range ls {
		l := &ls[i]
		var err error
		canon, err = Canonicalize(canon[:0], l.raw)
		l.raw = nil
		if err != nil || len(canon) == 0 || canon[0] != '{' {
			l.fault = fmt.Sprintf("line %d is not a JSON entry valid for RFC 8785: %v", l.n, err)
			continue
		}
		var ok bool
		if l.agentID, l.seq, ok = entryHead(canon); !ok {
			l.fault = fmt.Sprintf("line %d lacks a string agent_id or an integer sequence", l.n)
			continue
		}
		hs, he, ok := topLevelValue(canon, "hash")
		if !ok || he-hs != 66 {
			continue
		}
		l.hash = string(canon[hs+1 : he-1])
		l.body = withoutMember(canon, hs, he)
		l.hashOK = hashHex(l.body) == l.hash
		l.at = findLinks(l.body)
	}
}

// checkLines checks canonicalized lines of an export in order. The chain
// is the agent's of its first entry.
func (v *verifier) checkLines(ls []exportLine) error {
	for i := range ls {
		l := &ls[i]
		if l.fault != "" {
			return v.fail(v.next, l.fault)
		}
		if v.next == 1 {
			v.agentID = l.agentID
		}
		switch {
		case l.agentID != v.agentID:
			return v.fail(v.next, fmt.Sprintf("line %d belongs to agent %q, not %q", l.n, l.agentID, v.agentID))
		case l.hash == "":
			return v.fail(v.next, fmt.Sprintf("line %d has no 64-digit hash", l.n))
		case !l.hashOK:
			return v.fail(v.next, "the hash is not the SHA-256 of the canonical entry")
		}
		if err := v.checkLinks(l.seq, l.body, l.at, l.hash); err != nil {
			return err
		}
	}
	return nil
}

// entryHead reads agent_id and sequence from a canonical entry: agent_id
// sorts near the start, sequence near the end.
func entryHead(canon []byte) (agentID string, seq int64, ok bool) {
	as, ae, ok1 := topLevelValue(canon, "agent_id")
	ss, se, _, ok2 := topLevelValueFromEnd(canon, "sequence")
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

// bodyLinks locates the top-level prev_hash and sequence values of a
// canonical body (ok false when either is missing).
type bodyLinks struct {
	ps, pe, ss, se int
	ok             bool
}

// findLinks walks a canonical body's members once, from the end: only
// "timestamp" and "verdict" sort after "sequence", and only "reversibility"
// and "semantic_context" between "prev_hash" and "sequence", while the
// large members sort before both.
func findLinks(body []byte) bodyLinks {
	var l bodyLinks
	if ss, se, name, ok := topLevelValueFromEnd(body, "sequence"); ok {
		l.ps, l.pe, _, l.ok = topLevelValueBefore(body, name-1, "prev_hash")
		l.ss, l.se = ss, se
	}
	return l
}

// checkLinks checks the sequence and prev_hash written inside a canonical
// body, at the places findLinks located, against the chain so far, then
// advances.
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
	}
	return r, err
}
