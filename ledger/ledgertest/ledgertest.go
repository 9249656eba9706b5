package ledgertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/ledger"
)

// Factory opens stores for the suite.
type Factory struct {
	// Open returns a new, empty store; the factory registers its cleanup.
	Open func(t *testing.T) ledger.Store
	// Reopen closes s and opens the same underlying data again.
	Reopen func(t *testing.T, s ledger.Store) ledger.Store
}

// Record builds a valid record that follows head: a small canonical JSON
// body (keys sorted, no spaces) and its SHA-256.
func Record(agentID string, head ledger.Head, verdict, actionID string) *ledger.Record {
	seq := head.Sequence + 1
	body := fmt.Sprintf(`{"action_id":%q,"agent_id":%q,"prev_hash":%q,"sequence":%d,"verdict":{"decision":%q}}`,
		actionID, agentID, head.Hash, seq, verdict)
	sum := sha256.Sum256([]byte(body))
	return &ledger.Record{AgentID: agentID, Sequence: seq, PrevHash: head.Hash, Hash: hex.EncodeToString(sum[:]),
		Verdict: verdict, ActionID: actionID, Body: []byte(body)}
}

// appendOne appends a record that follows whatever head the store passes.
func appendOne(t *testing.T, s ledger.Store, agent, verdict, actionID string) *ledger.Record {
	t.Helper()
	rec, err := s.Append(context.Background(), agent, func(h ledger.Head) (*ledger.Record, error) {
		return Record(agent, h, verdict, actionID), nil
	})
	if err != nil {
		t.Fatalf("Append(%s): %v", agent, err)
	}
	return rec
}

var verdicts = []string{"ALLOW", "DENY", "ALLOW", "ESCALATE", "ALLOW", "DENY", "MODIFY", "ALLOW", "SUSPEND", "DENY"}

// Run runs the whole suite against the factory's stores.
func Run(t *testing.T, f Factory) {
	t.Run("EmptyStore", func(t *testing.T) { testEmpty(t, f) })
	t.Run("AppendAndGet", func(t *testing.T) { testAppendGet(t, f) })
	t.Run("RefusesBrokenLinks", func(t *testing.T) { testRefuses(t, f) })
	t.Run("Range", func(t *testing.T) { testRange(t, f) })
	t.Run("LatestAndFilter", func(t *testing.T) { testLatest(t, f) })
	t.Run("Agents", func(t *testing.T) { testAgents(t, f) })
	t.Run("ConcurrentAppendersOneAgent", func(t *testing.T) { testConcurrent(t, f, 8, 1, 40) })
	t.Run("ConcurrentAppendersManyAgents", func(t *testing.T) { testConcurrent(t, f, 32, 8, 25) })
	t.Run("Reopen", func(t *testing.T) { testReopen(t, f) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, f) })
}

func testEmpty(t *testing.T, f Factory) {
	s, ctx := f.Open(t), context.Background()
	h, err := s.Head(ctx, "nobody")
	if err != nil || h != (ledger.Head{Sequence: 0, Hash: ledger.ZeroHash}) {
		t.Errorf("Head of an unknown agent: got %+v, %v; want {0 zeros}, nil", h, err)
	}
	if _, err := s.Get(ctx, "nobody", 1); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get of an unknown agent: got %v, want ErrNotFound", err)
	}
	if got, err := s.Latest(ctx, "nobody", "", 10); err != nil || len(got) != 0 {
		t.Errorf("Latest of an unknown agent: got %d records, %v; want none", len(got), err)
	}
	if got, err := s.Agents(ctx); err != nil || len(got) != 0 {
		t.Errorf("Agents of an empty store: got %v, %v; want none", got, err)
	}
}

func testAppendGet(t *testing.T, f Factory) {
	s, ctx := f.Open(t), context.Background()
	var want []*ledger.Record
	for i, v := range verdicts {
		rec := appendOne(t, s, "agent-a", v, "act_"+strconv.Itoa(i))
		if rec.Sequence != int64(i+1) {
			t.Fatalf("append %d: got sequence %d, want %d", i, rec.Sequence, i+1)
		}
		want = append(want, rec)
	}
	for _, w := range want {
		got, err := s.Get(ctx, "agent-a", w.Sequence)
		if err != nil {
			t.Fatalf("Get %d: %v", w.Sequence, err)
		}
		if !sameRecord(got, w) {
			t.Errorf("Get %d: got %+v, want %+v", w.Sequence, brief(got), brief(w))
		}
	}
	h, err := s.Head(ctx, "agent-a")
	if err != nil || h.Sequence != int64(len(verdicts)) || h.Hash != want[len(want)-1].Hash {
		t.Errorf("Head: got %+v, %v; want the last record", h, err)
	}
	for _, seq := range []int64{0, -1, int64(len(verdicts) + 1)} {
		if _, err := s.Get(ctx, "agent-a", seq); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Get %d: got %v, want ErrNotFound", seq, err)
		}
	}
	if want[0].PrevHash != ledger.ZeroHash {
		t.Errorf("first record's prev_hash: got %s, want 64 zeros", want[0].PrevHash)
	}
}

func testRefuses(t *testing.T, f Factory) {
	s, ctx := f.Open(t), context.Background()
	appendOne(t, s, "agent-a", "ALLOW", "act_1")
	cases := []struct {
		name  string
		build func(h ledger.Head) (*ledger.Record, error)
	}{
		{"sequence skips one", func(h ledger.Head) (*ledger.Record, error) {
			return Record("agent-a", ledger.Head{Sequence: h.Sequence + 1, Hash: h.Hash}, "ALLOW", "x"), nil
		}},
		{"sequence repeats", func(h ledger.Head) (*ledger.Record, error) {
			return Record("agent-a", ledger.Head{Sequence: h.Sequence - 1, Hash: h.Hash}, "ALLOW", "x"), nil
		}},
		{"prev_hash is not the head's", func(h ledger.Head) (*ledger.Record, error) {
			return Record("agent-a", ledger.Head{Sequence: h.Sequence, Hash: ledger.ZeroHash}, "ALLOW", "x"), nil
		}},
		{"build fails", func(h ledger.Head) (*ledger.Record, error) { return nil, errors.New("no") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Append(ctx, "agent-a", tc.build); err == nil {
				t.Fatal("Append: got nil error, want a refusal")
			}
			if h, _ := s.Head(ctx, "agent-a"); h.Sequence != 1 {
				t.Errorf("head after a refused append: got %d, want 1", h.Sequence)
			}
		})
	}
	if rec := appendOne(t, s, "agent-a", "DENY", "act_2"); rec.Sequence != 2 {
		t.Errorf("append after refusals: got sequence %d, want 2", rec.Sequence)
	}
}

func testRange(t *testing.T, f Factory) {
	s, ctx := f.Open(t), context.Background()
	for i := range 10 {
		appendOne(t, s, "agent-a", "ALLOW", "act_"+strconv.Itoa(i))
	}
	cases := []struct {
		name     string
		from, to int64
		want     []int64
	}{
		{"middle", 3, 7, []int64{3, 4, 5, 6, 7}},
		{"all", 1, 10, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"past the head is cut", 9, 20, []int64{9, 10}},
		{"before the first is cut", -5, 2, []int64{1, 2}},
		{"empty", 7, 3, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			err := s.Range(ctx, "agent-a", tc.from, tc.to, func(r *ledger.Record) error {
				got = append(got, r.Sequence)
				return nil
			})
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	stop := errors.New("stop")
	n := 0
	err := s.Range(ctx, "agent-a", 1, 10, func(*ledger.Record) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Errorf("Range stopping: got %d calls, %v; want 3, stop", n, err)
	}
}

func testLatest(t *testing.T, f Factory) {
	s, ctx := f.Open(t), context.Background()
	for i, v := range verdicts {
		appendOne(t, s, "agent-a", v, "act_"+strconv.Itoa(i))
	}
	cases := []struct {
		name    string
		verdict string
		limit   int
		want    []int64
	}{
		{"newest three", "", 3, []int64{10, 9, 8}},
		{"all, newest first", "", 50, []int64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}},
		{"denials", "DENY", 50, []int64{10, 6, 2}},
		{"two newest denials", "DENY", 2, []int64{10, 6}},
		{"no such verdict", "NOPE", 5, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := s.Latest(ctx, "agent-a", tc.verdict, tc.limit)
			var got []int64
			for _, r := range recs {
				got = append(got, r.Sequence)
				if tc.verdict != "" && r.Verdict != tc.verdict {
					t.Errorf("record %d has verdict %s, want %s", r.Sequence, r.Verdict, tc.verdict)
				}
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func testAgents(t *testing.T, f Factory) {
	s, ctx := f.Open(t), context.Background()
	for _, a := range []string{"zeta", "alpha", "mid-1", "alpha"} {
		appendOne(t, s, a, "ALLOW", "x")
	}
	got, err := s.Agents(ctx)
	if want := []string{"alpha", "mid-1", "zeta"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Agents: got %v, %v; want %v", got, err, want)
	}
}

// testConcurrent runs writers goroutines appending perWriter records each,
// spread over agents agents, and checks every chain is 1..n with valid links.
func testConcurrent(t *testing.T, f Factory, writers, agents, perWriter int) {
	s, ctx := f.Open(t), context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				agent := "agent-" + strconv.Itoa((w+i)%agents)
				_, err := s.Append(ctx, agent, func(h ledger.Head) (*ledger.Record, error) {
					return Record(agent, h, verdicts[i%len(verdicts)], fmt.Sprintf("w%d-%d", w, i)), nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Append: %v", err)
	}
	total := int64(0)
	for a := range agents {
		agent := "agent-" + strconv.Itoa(a)
		n := CheckChain(t, s, agent)
		total += n
	}
	if want := int64(writers * perWriter); total != want {
		t.Errorf("records in all chains: got %d, want %d", total, want)
	}
}

// CheckChain verifies an agent's chain link by link (sequence, prev_hash,
// and each hash against its body) and returns its length.
func CheckChain(t *testing.T, s ledger.Store, agent string) int64 {
	t.Helper()
	ctx := context.Background()
	h, err := s.Head(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	prev, next := ledger.ZeroHash, int64(1)
	err = s.Range(ctx, agent, 1, h.Sequence, func(r *ledger.Record) error {
		if r.Sequence != next {
			return fmt.Errorf("%s: got sequence %d, want %d (gap or fork)", agent, r.Sequence, next)
		}
		if r.PrevHash != prev {
			return fmt.Errorf("%s %d: prev_hash does not match the previous hash (fork)", agent, r.Sequence)
		}
		sum := sha256.Sum256(r.Body)
		if hex.EncodeToString(sum[:]) != r.Hash {
			return fmt.Errorf("%s %d: hash is not the SHA-256 of the body", agent, r.Sequence)
		}
		prev, next = r.Hash, next+1
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next-1 != h.Sequence || prev != h.Hash {
		t.Fatalf("%s: chain ends at %d, head says %d", agent, next-1, h.Sequence)
	}
	return h.Sequence
}

func testReopen(t *testing.T, f Factory) {
	s, ctx := f.Open(t), context.Background()
	var want []*ledger.Record
	for i, v := range verdicts {
		want = append(want, appendOne(t, s, "agent-"+strconv.Itoa(i%3), v, "act_"+strconv.Itoa(i)))
	}
	s = f.Reopen(t, s)
	for _, w := range want {
		got, err := s.Get(ctx, w.AgentID, w.Sequence)
		if err != nil || !sameRecord(got, w) {
			t.Fatalf("after reopen, Get %s %d: got %+v, %v; want %+v", w.AgentID, w.Sequence, brief(got), err, brief(w))
		}
	}
	rec := appendOne(t, s, "agent-0", "ALLOW", "after")
	if rec.Sequence != 5 {
		t.Errorf("append after reopen: got sequence %d, want 5", rec.Sequence)
	}
	CheckChain(t, s, "agent-0")
	if got, _ := s.Latest(ctx, "agent-0", "DENY", 10); len(got) != 1 {
		t.Errorf("verdict filter after reopen: got %d denials, want 1", len(got))
	}
}

func testClosed(t *testing.T, f Factory) {
	s := f.Open(t)
	appendOne(t, s, "agent-a", "ALLOW", "x")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := s.Append(context.Background(), "agent-a", func(h ledger.Head) (*ledger.Record, error) {
		return Record("agent-a", h, "ALLOW", "y"), nil
	})
	if !errors.Is(err, ledger.ErrClosed) {
		t.Errorf("Append after Close: got %v, want ErrClosed", err)
	}
}

func sameRecord(a, b *ledger.Record) bool {
	return a != nil && b != nil && a.AgentID == b.AgentID && a.Sequence == b.Sequence && a.PrevHash == b.PrevHash &&
		a.Hash == b.Hash && a.Verdict == b.Verdict && a.ActionID == b.ActionID && string(a.Body) == string(b.Body)
}

func brief(r *ledger.Record) string {
	if r == nil {
		return "<nil>"
	}
	return fmt.Sprintf("{%s %d %s %s %.12s…}", r.AgentID, r.Sequence, r.Verdict, r.ActionID, r.Hash)
}
