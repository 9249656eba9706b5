package ledger_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/ledger"
)

// chainFixture evaluates n decisions of one agent (allowed reads, a denied
// export, escalated deletes, ...) through a real governor and records them.
func chainFixture(t *testing.T, n int) (*ledger.Ledger, *governor.Engine) {
	t.Helper()
	now := time.Date(2026, 11, 2, 10, 30, 0, 0, time.UTC)
	e, err := governor.New(governor.DefaultConfig(), governor.WithClock(func() time.Time { now = now.Add(time.Second); return now }))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetContract(governor.Contract{AgentID: "bot", Archetype: "customer-experience", Scope: []string{"read", "refund", "delete"},
		HumanOverride: []string{"delete"}, Authority: []string{"!has(action.parameters.amount) || action.parameters.amount <= 500"}}); err != nil {
		t.Fatal(err)
	}
	store, err := ledger.OpenFileStore(t.TempDir(), ledger.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	l := ledger.New(store)
	actions := []governor.Action{
		{Type: "read", Target: "customers/1"},
		{Type: "refund", Target: "payments/1", Parameters: map[string]any{"amount": 900.0}},
		{Type: "delete", Target: "customers/1", Parameters: map[string]any{"why": "gdpr <&> \u2028 é"}},
		{Type: "export", Target: "customers"},
	}
	for i := range n {
		d, err := e.Evaluate(governor.Request{AgentID: "bot", Action: actions[i%len(actions)]})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := l.Append(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Sequence != int64(i+1) {
			t.Fatalf("entry %d: got sequence %d", i+1, rec.Sequence)
		}
	}
	return l, e
}

func export(t *testing.T, l *ledger.Ledger) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	if err := l.Export(context.Background(), "bot", &buf); err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
}

func join(lines [][]byte) *bytes.Reader {
	return bytes.NewReader(append(bytes.Join(lines, []byte("\n")), '\n'))
}

func TestAppendedEntries(t *testing.T) {
	l, _ := chainFixture(t, 8)
	ctx := context.Background()
	prev := ledger.ZeroHash
	for seq := int64(1); seq <= 8; seq++ {
		rec, err := l.Get(ctx, "bot", seq)
		if err != nil {
			t.Fatal(err)
		}
		e, err := ledger.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if e.Sequence != seq || e.PrevHash != prev || e.Hash != rec.Hash || e.AgentID != "bot" {
			t.Errorf("entry %d: got sequence %d, prev %.8s, hash %.8s; want %d, %.8s, %.8s", seq, e.Sequence, e.PrevHash, e.Hash, seq, prev, rec.Hash)
		}
		if len(e.DimensionScores) != 13 && e.Verdict.Decision != "ESCALATE" {
			t.Errorf("entry %d: got %d dimension scores, want 13", seq, len(e.DimensionScores))
		}
		decided := 0
		for _, s := range e.Pipeline {
			if s.DecidedVerdict {
				decided++
			}
		}
		if decided != 1 || !e.Pipeline[len(e.Pipeline)-1].DecidedVerdict {
			t.Errorf("entry %d: %d deciding steps; want exactly one, the last", seq, decided)
		}
		if seq > 1 && (len(e.CausalLinks) == 0 || e.CausalLinks[0].Sequence != seq-1 || e.CausalLinks[0].Kind != "predecessor") {
			t.Errorf("entry %d: got causal links %+v, want the predecessor %d", seq, e.CausalLinks, seq-1)
		}
		if len(e.ContractSnapshot) == 0 || !strings.Contains(string(e.ContractSnapshot), `"agent_id":"bot"`) {
			t.Errorf("entry %d: contract snapshot missing: %s", seq, e.ContractSnapshot)
		}
		prev = rec.Hash
	}
	latest, err := l.Latest(ctx, "bot")
	if err != nil || latest.Sequence != 8 {
		t.Errorf("Latest: got %v, %v; want 8", latest, err)
	}
	denied, err := l.List(ctx, "bot", "DENY", 10)
	if err != nil || len(denied) != 4 || denied[0].Sequence != 8 {
		t.Errorf("List DENY: got %d entries (first %v), %v; want 4, newest 8", len(denied), denied, err)
	}
}

func TestVerifyStoredChain(t *testing.T) {
	l, _ := chainFixture(t, 12)
	r, err := l.Verify(context.Background(), "bot")
	if err != nil || !r.Valid || r.Entries != 12 || r.HeadSeq != 12 || r.FirstInvalid != 0 {
		t.Errorf("Verify: got %+v, %v; want a valid chain of 12", r, err)
	}
	head, _ := l.Head(context.Background(), "bot")
	if r.HeadHash != head.Hash {
		t.Errorf("head hash: got %s, want %s", r.HeadHash, head.Hash)
	}
	empty, err := l.Verify(context.Background(), "nobody")
	if err != nil || !empty.Valid || empty.Entries != 0 {
		t.Errorf("Verify of an empty chain: got %+v, %v", empty, err)
	}
}

// tamperedStore serves a real store's records through an edit, as if the
// file or the Redis keys had been altered behind the ledger's back.
type tamperedStore struct {
	ledger.Store
	edit func([]*ledger.Record) ([]*ledger.Record, error)
}

func (s tamperedStore) Range(ctx context.Context, agentID string, from, to int64, fn func(*ledger.Record) error) error {
	var recs []*ledger.Record
	if err := s.Store.Range(ctx, agentID, from, to, func(r *ledger.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		return err
	}
	recs, err := s.edit(recs)
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return err
}

// rehash makes a record's stored hash the SHA-256 of its (edited) body, as
// a forger would.
func rehash(r *ledger.Record) {
	sum := sha256.Sum256(r.Body)
	r.Hash = hex.EncodeToString(sum[:])
}

// TestVerifyStoredChainTampered alters a stored chain of 30 entries at the
// first entry, in a middle batch and at the end, and checks that Verify
// names that entry: with the default batches, and with batches of 4 and 2
// in flight, so that breaks are found while more batches are being hashed,
// in the last partial batch and at the first.
func TestVerifyStoredChainTampered(t *testing.T) {
	const n = 30
	l, _ := chainFixture(t, n)
	replace := func(r *ledger.Record, old, new string) {
		if !bytes.Contains(r.Body, []byte(old)) {
			t.Fatalf("entry %d has no %s", r.Sequence, old)
		}
		r.Body = bytes.Replace(r.Body, []byte(old), []byte(new), 1)
	}
	cases := []struct {
		name string
		at   []int64
		edit func(recs []*ledger.Record, i int) []*ledger.Record // i: the index of the entry at
	}{
		{"a byte of the body flipped", []int64{1, 9, 30}, func(recs []*ledger.Record, i int) []*ledger.Record {
			recs[i].Body[len(recs[i].Body)/2] ^= 0x01
			return recs
		}},
		{"the stored hash replaced", []int64{1, 9, 30}, func(recs []*ledger.Record, i int) []*ledger.Record {
			recs[i].Hash = strings.Repeat("ab", 32)
			return recs
		}},
		{"prev_hash in the body rewritten and rehashed", []int64{1, 9, 30}, func(recs []*ledger.Record, i int) []*ledger.Record {
			replace(recs[i], `"prev_hash":"`+recs[i].PrevHash, `"prev_hash":"`+strings.Repeat("0f", 32))
			rehash(recs[i])
			return recs
		}},
		{"sequence in the body rewritten and rehashed", []int64{1, 9, 30}, func(recs []*ledger.Record, i int) []*ledger.Record {
			seq := strconv.FormatInt(recs[i].Sequence, 10)
			replace(recs[i], `,"sequence":`+seq+`,`, `,"sequence":`+seq+`0,`)
			rehash(recs[i])
			return recs
		}},
		{"the entry missing", []int64{1, 9, 30}, func(recs []*ledger.Record, i int) []*ledger.Record {
			return append(recs[:i:i], recs[i+1:]...)
		}},
		{"swapped with the next entry", []int64{1, 9, 29}, func(recs []*ledger.Record, i int) []*ledger.Record {
			recs[i], recs[i+1] = recs[i+1], recs[i]
			return recs
		}},
		{"an entry inserted before it", []int64{1, 9, 30}, func(recs []*ledger.Record, i int) []*ledger.Record {
			return append(append(recs[:i:i], recs[(i+1)%n]), recs[i:]...)
		}},
	}
	ctx := context.Background()
	verifiers := []struct {
		name   string
		verify func(l *ledger.Ledger) (ledger.Report, error)
	}{
		{"default batches", func(l *ledger.Ledger) (ledger.Report, error) { return l.Verify(ctx, "bot") }},
		{"batches of 4, 2 in flight", func(l *ledger.Ledger) (ledger.Report, error) { return ledger.VerifyInBatches(ctx, l, "bot", 4, 2) }},
		{"batches of 1, 1 in flight", func(l *ledger.Ledger) (ledger.Report, error) { return ledger.VerifyInBatches(ctx, l, "bot", 1, 1) }},
	}
	for _, vf := range verifiers {
		t.Run(vf.name+"/intact", func(t *testing.T) {
			r, err := vf.verify(ledger.New(tamperedStore{l.Store(), func(recs []*ledger.Record) ([]*ledger.Record, error) { return recs, nil }}))
			if err != nil || !r.Valid || r.Entries != n {
				t.Errorf("got %+v, %v; want a valid chain of %d", r, err, n)
			}
		})
		for _, tc := range cases {
			for _, at := range tc.at {
				t.Run(fmt.Sprintf("%s/%s/entry %d", vf.name, tc.name, at), func(t *testing.T) {
					store := tamperedStore{l.Store(), func(recs []*ledger.Record) ([]*ledger.Record, error) {
						return tc.edit(recs, int(at-1)), nil
					}}
					r, err := vf.verify(ledger.New(store))
					var ve *ledger.VerifyError
					if !errors.As(err, &ve) || !errors.Is(err, ledger.ErrChainBroken) || r.Valid || r.FirstInvalid != at || ve.Sequence != at {
						t.Errorf("got %+v, %v; want invalid at %d", r, err, at)
					}
				})
			}
		}
		t.Run(vf.name+"/a failing read", func(t *testing.T) {
			broken := errors.New("disk on fire")
			store := tamperedStore{l.Store(), func(recs []*ledger.Record) ([]*ledger.Record, error) { return recs[:17], broken }}
			if r, err := vf.verify(ledger.New(store)); !errors.Is(err, broken) || errors.Is(err, ledger.ErrChainBroken) || r.Valid {
				t.Errorf("got %+v, %v; want the read error", r, err)
			}
		})
	}
}

func TestVerifyExport(t *testing.T) {
	l, _ := chainFixture(t, 10)
	lines := export(t, l)
	if len(lines) != 10 {
		t.Fatalf("export: got %d lines, want 10", len(lines))
	}
	r, err := ledger.VerifyStream(join(lines))
	if err != nil || !r.Valid || r.Entries != 10 {
		t.Fatalf("VerifyStream of an intact export: got %+v, %v", r, err)
	}

	// The published rule, applied the way an outsider would (without the
	// ledger's verifier): decode, drop "hash", canonicalize, SHA-256, and
	// chain prev_hash to the previous line's hash.
	prev := ledger.ZeroHash
	for i, line := range lines {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		hash, _ := m["hash"].(string)
		delete(m, "hash")
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		canon, err := ledger.Canonicalize(nil, raw)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(canon)
		if got := hex.EncodeToString(sum[:]); got != hash {
			t.Errorf("line %d: SHA-256 of the canonical entry is %s, the line says %s", i+1, got, hash)
		}
		if m["prev_hash"] != prev || m["sequence"] != json.Number(strconv.Itoa(i+1)) {
			t.Errorf("line %d: got sequence %v, prev_hash %v; want %d, %s", i+1, m["sequence"], m["prev_hash"], i+1, prev)
		}
		prev = hash
	}

	cases := []struct {
		name string
		edit func([][]byte) [][]byte
		want int64
	}{
		{"entry 4 deleted", func(ls [][]byte) [][]byte { return append(ls[:3:3], ls[4:]...) }, 4},
		{"entry 1 deleted", func(ls [][]byte) [][]byte { return ls[1:] }, 1},
		{"entries 6 and 7 swapped", func(ls [][]byte) [][]byte {
			c := append([][]byte(nil), ls...)
			c[5], c[6] = c[6], c[5]
			return c
		}, 6},
		{"entry 9 duplicated", func(ls [][]byte) [][]byte { return append(append(ls[:9:9], ls[8]), ls[9:]...) }, 10},
		{"a trailing entry of another agent", func(ls [][]byte) [][]byte {
			return append(ls[:10:10], bytes.Replace(ls[9], []byte(`"agent_id":"bot"`), []byte(`"agent_id":"other"`), 1))
		}, 11},
		{"line 7 is not JSON", func(ls [][]byte) [][]byte { return edited(ls, 6, []byte(`{"agent_id":`)) }, 7},
		{"line 1 is not JSON", func(ls [][]byte) [][]byte { return edited(ls, 0, []byte(`nope`)) }, 1},
		{"line 5 lacks its hash", func(ls [][]byte) [][]byte {
			return edited(ls, 4, regexp.MustCompile(`,"hash":"[0-9a-f]{64}"`).ReplaceAll(ls[4], nil))
		}, 5},
		{"line 9 lacks its sequence", func(ls [][]byte) [][]byte {
			return edited(ls, 8, regexp.MustCompile(`,"sequence":9,`).ReplaceAll(ls[8], []byte(",")))
		}, 9},
	}
	verifiers := []struct {
		name   string
		verify func(io.Reader) (ledger.Report, error)
	}{
		{"default batches", ledger.VerifyStream},
		{"batches of 3, 2 in flight", func(r io.Reader) (ledger.Report, error) { return ledger.VerifyStreamInBatches(r, 3, 2) }},
		{"batches of 1, 1 in flight", func(r io.Reader) (ledger.Report, error) { return ledger.VerifyStreamInBatches(r, 1, 1) }},
	}
	for _, vf := range verifiers {
		t.Run(vf.name+"/intact, with blank lines", func(t *testing.T) {
			withBlanks := append([][]byte{{}}, lines[:4]...)
			withBlanks = append(append(withBlanks, []byte("  \t")), lines[4:]...)
			r, err := vf.verify(join(withBlanks))
			if err != nil || !r.Valid || r.Entries != 10 || r.HeadSeq != 10 {
				t.Errorf("got %+v, %v; want a valid chain of 10", r, err)
			}
		})
		for _, tc := range cases {
			t.Run(vf.name+"/"+tc.name, func(t *testing.T) {
				r, err := vf.verify(join(tc.edit(lines)))
				if !errors.Is(err, ledger.ErrChainBroken) || r.Valid || r.FirstInvalid != tc.want {
					t.Errorf("got %+v, %v; want invalid at %d", r, err, tc.want)
				}
			})
		}
	}
}

// edited returns a copy of lines with line i replaced.
func edited(lines [][]byte, i int, line []byte) [][]byte {
	c := append([][]byte(nil), lines...)
	c[i] = line
	return c
}

// TestAnyByteTamperingIsDetected flips bytes all over every exported entry
// (a stride through each line, plus every byte of the hash and sequence
// members) and checks that verification fails at that entry.
func TestAnyByteTamperingIsDetected(t *testing.T) {
	l, _ := chainFixture(t, 6)
	lines := export(t, l)
	checked := 0
	for i, line := range lines {
		positions := map[int]bool{}
		for p := 0; p < len(line); p += 37 {
			positions[p] = true
		}
		for _, key := range []string{`"hash":"`, `"sequence":`, `"prev_hash":"`, `"decision":"`} {
			if at := bytes.LastIndex(line, []byte(key)); at >= 0 {
				for p := at; p < at+len(key)+8 && p < len(line); p++ {
					positions[p] = true
				}
			}
		}
		for p := range positions {
			for _, flip := range []byte{0x01, 0x20} {
				tampered := append([][]byte(nil), lines...)
				c := append([]byte(nil), line...)
				c[p] ^= flip
				if c[p] == '\n' || c[p] == '\r' {
					continue // would split the line: another case (an inserted line)
				}
				tampered[i] = c
				r, err := ledger.VerifyStream(join(tampered))
				if err == nil || r.Valid || r.FirstInvalid != int64(i+1) {
					t.Fatalf("entry %d, byte %d (%q→%q) flipped: got %+v, %v; want invalid at %d",
						i+1, p, line[p], c[p], r, err, i+1)
				}
				checked++
			}
		}
	}
	t.Logf("%d tampered exports, all detected at the right entry", checked)
}

func TestTrace(t *testing.T) {
	l, _ := chainFixture(t, 15)
	ctx := context.Background()
	cases := []struct {
		name    string
		seq     int64
		depth   int
		wantLen int
	}{
		{"depth 5", 15, 5, 5},
		{"depth larger than the chain", 3, 100, 3},
		{"depth 1 is the entry alone", 7, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := l.Trace(ctx, "bot", tc.seq, tc.depth)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tc.wantLen || recs[0].Sequence != tc.seq {
				t.Fatalf("got %d entries starting at %d, want %d starting at %d", len(recs), recs[0].Sequence, tc.wantLen, tc.seq)
			}
			// Causally closed: every later entry is the target of a link of
			// an entry before it in the trace, and none repeats.
			linked := map[int64]bool{}
			seen := map[int64]bool{}
			for i, r := range recs {
				if seen[r.Sequence] {
					t.Errorf("entry %d appears twice", r.Sequence)
				}
				seen[r.Sequence] = true
				if i > 0 && !linked[r.Sequence] {
					t.Errorf("entry %d is in the trace but no earlier entry links to it", r.Sequence)
				}
				e, _ := ledger.Decode(r)
				for _, link := range e.CausalLinks {
					linked[link.Sequence] = true
				}
			}
		})
	}
	// Entry 13 repeats the denied refund of entry 10 (and 6, 2): its trace
	// follows the resubmission link as well as the predecessor.
	recs, _ := l.Trace(ctx, "bot", 14, 3)
	e, _ := ledger.Decode(recs[0])
	kinds := map[string]int64{}
	for _, link := range e.CausalLinks {
		kinds[link.Kind] = link.Sequence
	}
	if kinds["predecessor"] != 13 || kinds["resubmission"] != 10 {
		t.Errorf("links of entry 14: got %v, want predecessor 13 and resubmission 10", kinds)
	}
	if _, err := l.Trace(ctx, "bot", 99, 3); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("trace of a missing entry: got %v, want ErrNotFound", err)
	}
}

func TestLargeIntegersAreRecordedAsStrings(t *testing.T) {
	e, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetContract(governor.Contract{AgentID: "bot"}); err != nil {
		t.Fatal(err)
	}
	store, _ := ledger.OpenFileStore(t.TempDir(), ledger.FileOptions{})
	defer store.Close()
	l := ledger.New(store)
	var params map[string]any
	dec := json.NewDecoder(strings.NewReader(`{"big": 12345678901234567890, "edge": 9007199254740993, "safe": 9007199254740992, "small": 42, "f": 1.5}`))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		t.Fatal(err)
	}
	d, err := e.Evaluate(governor.Request{AgentID: "bot", Action: governor.Action{Type: "create", Target: "x", Parameters: params}})
	if err != nil {
		t.Fatal(err)
	}
	appended, err := l.Append(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if appended.Body != nil {
		t.Errorf("Append returned a body (%d bytes); its buffer is the ledger's", len(appended.Body))
	}
	rec, err := l.Get(context.Background(), "bot", appended.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"big":"12345678901234567890"`, `"edge":"9007199254740993"`, `"safe":9007199254740992`, `"small":42`, `"f":1.5`} {
		if !bytes.Contains(rec.Body, []byte(want)) {
			t.Errorf("body lacks %s: %s", want, rec.Body[:200])
		}
	}
	// Go integers from an embedding program: the same rule.
	d, err = e.Evaluate(governor.Request{AgentID: "bot", Action: governor.Action{Type: "create", Target: "x",
		Parameters: map[string]any{"int": 1 << 60, "uint": uint(1) << 60, "in": map[string]any{"i64": int64(-1) << 55}, "list": []any{int32(7), 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	if appended, err = l.Append(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if rec, err = l.Get(context.Background(), "bot", appended.Sequence); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"int":"1152921504606846976"`, `"uint":"1152921504606846976"`, `"i64":"-36028797018963968"`, `"list":[7,3]`} {
		if !bytes.Contains(rec.Body, []byte(want)) {
			t.Errorf("body lacks %s: %s", want, rec.Body)
		}
	}
}

// TestEntrySize: a typical entry is a few KB (BENCHMARKS.md reports the
// figure), and its exported form is exactly the body plus the hash member.
func TestEntrySize(t *testing.T) {
	l, _ := chainFixture(t, 4)
	for seq := int64(1); seq <= 4; seq++ {
		rec, err := l.Get(context.Background(), "bot", seq)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("entry %d (%s): %d bytes canonical, %d bytes exported", seq, rec.Verdict, len(rec.Body), len(rec.JSON()))
		if n := len(rec.Body); n < 1000 || n > 16<<10 {
			t.Errorf("entry %d: %d bytes canonical, want a self-contained entry of 1-16 KB", seq, n)
		}
		if got, want := len(rec.JSON()), len(rec.Body)+len(`,"hash":""`)+64; got != want {
			t.Errorf("entry %d: exported %d bytes, want body + hash member = %d", seq, got, want)
		}
	}
}
