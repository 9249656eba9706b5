package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/ledger"
	"github.com/vigilhq/vigil/test/redistest"
)

// Store modes of outageStore.
const (
	storeUp        int32 = iota
	storeDown            // every call fails with ErrUnavailable, untouched
	storeLostReply       // appends are stored, then fail with ErrUnavailable
)

// outageStore is a real store whose backend can be made unreachable: the
// faults an outage of Redis causes, on a FileStore.
type outageStore struct {
	ledger.Store
	mode atomic.Int32
}

func (s *outageStore) Append(ctx context.Context, agentID string, build func(ledger.Head) (*ledger.Record, error)) (*ledger.Record, error) {
	switch s.mode.Load() {
	case storeDown:
		return nil, fmt.Errorf("%w: test outage", ledger.ErrUnavailable)
	case storeLostReply:
		if _, err := s.Store.Append(ctx, agentID, build); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: test outage, reply lost", ledger.ErrUnavailable)
	}
	return s.Store.Append(ctx, agentID, build)
}

func (s *outageStore) Latest(ctx context.Context, agentID, verdict string, limit int) ([]*ledger.Record, error) {
	if s.mode.Load() == storeDown {
		return nil, fmt.Errorf("%w: test outage", ledger.ErrUnavailable)
	}
	return s.Store.Latest(ctx, agentID, verdict, limit)
}

// decider evaluates allowed reads for agents through a real governor.
type decider struct {
	t   *testing.T
	eng *governor.Engine
	n   atomic.Int64
}

func newDecider(t *testing.T, agents ...string) *decider {
	t.Helper()
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range agents {
		if err := eng.SetContract(governor.Contract{AgentID: id, Scope: []string{"read"}}); err != nil {
			t.Fatal(err)
		}
	}
	return &decider{t: t, eng: eng}
}

func (d *decider) decide(agentID string) *governor.Decision {
	d.t.Helper()
	dec, err := d.eng.Evaluate(governor.Request{AgentID: agentID,
		Action: governor.Action{Type: "read", Target: fmt.Sprintf("customers/%d", d.n.Add(1))}})
	if err != nil {
		d.t.Fatal(err)
	}
	return dec
}

// appendAll appends n decisions of each agent, the agents concurrently and
// each agent's in order, and returns each agent's action ids in that order
// and how many appends were spooled.
func appendAll(t *testing.T, l *ledger.Ledger, d *decider, n int, agents ...string) (map[string][]string, int) {
	t.Helper()
	var (
		mu      sync.Mutex
		ids     = map[string][]string{}
		spooled int
		wg      sync.WaitGroup
	)
	for _, id := range agents {
		wg.Go(func() {
			for range n {
				dec := d.decide(id)
				rec, err := l.Append(context.Background(), dec)
				if err != nil {
					t.Errorf("append for %s: %v", id, err)
					return
				}
				mu.Lock()
				ids[id] = append(ids[id], dec.ActionID)
				if rec.Spooled {
					spooled++
					if rec.Sequence != 0 || rec.Hash != "" {
						t.Errorf("spooled record carries sequence %d, hash %q", rec.Sequence, rec.Hash)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ids, spooled
}

// waitReplayed waits until the ledger's spool is empty.
func waitReplayed(t *testing.T, l *ledger.Ledger) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for l.Spooled() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries still spooled after 30s", l.Spooled())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkChains verifies every agent's chain in the store and that it holds
// exactly the wanted action ids, in order.
func checkChains(t *testing.T, l *ledger.Ledger, want map[string][]string) {
	t.Helper()
	ctx := context.Background()
	for id, ids := range want {
		rep, err := l.Verify(ctx, id)
		if err != nil || !rep.Valid {
			t.Fatalf("verify %s: %+v, %v", id, rep, err)
		}
		var got []string
		if err := l.Store().Range(ctx, id, 1, rep.HeadSeq, func(r *ledger.Record) error {
			got = append(got, r.ActionID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, ids) {
			t.Fatalf("agent %s: chain holds %d entries %v, want %d %v", id, len(got), got, len(ids), ids)
		}
	}
}

func openSpool(t *testing.T, dir string) *ledger.Spool {
	t.Helper()
	sp, err := ledger.OpenSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// newOutageStore returns an outageStore on a new FileStore, closed when t
// ends.
func newOutageStore(t *testing.T) *outageStore {
	t.Helper()
	fs, err := ledger.OpenFileStore(t.TempDir(), ledger.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return &outageStore{Store: fs}
}

func newOutageLedger(t *testing.T) (*ledger.Ledger, *outageStore, *ledger.Spool) {
	t.Helper()
	st := newOutageStore(t)
	sp := openSpool(t, t.TempDir())
	l := ledger.NewWithOptions(st, ledger.Options{Spool: sp, RetryEvery: 20 * time.Millisecond})
	t.Cleanup(func() { l.Close(); sp.Close() })
	return l, st, sp
}

func merge(parts ...map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, p := range parts {
		for id, ids := range p {
			out[id] = append(out[id], ids...)
		}
	}
	return out
}

func TestSpoolOutages(t *testing.T) {
	agents := []string{"a", "b", "c"}
	tests := []struct {
		name string
		mode int32
	}{
		{"store unreachable", storeDown},
		{"replies lost after the store took the entries", storeLostReply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, st, _ := newOutageLedger(t)
			d := newDecider(t, agents...)
			before, spooled := appendAll(t, l, d, 5, agents...)
			if spooled != 0 {
				t.Fatalf("%d appends spooled with the store up", spooled)
			}
			st.mode.Store(tc.mode)
			during, spooled := appendAll(t, l, d, 20, agents...)
			if spooled != 60 {
				t.Fatalf("%d of 60 appends spooled during the outage", spooled)
			}
			if got := l.Spooled(); got == 0 {
				t.Fatalf("Spooled() = 0 during the outage")
			}
			st.mode.Store(storeUp)
			waitReplayed(t, l)
			after, spooled := appendAll(t, l, d, 5, agents...)
			if spooled != 0 {
				t.Fatalf("%d appends spooled after the replay", spooled)
			}
			checkChains(t, l, merge(before, during, after))
		})
	}
}

// An agent with entries in the spool keeps spooling, even for an append the
// store would take, until they are replayed: its chain keeps the order of
// its decisions. Another agent is not held up.
func TestSpoolKeepsAnAgentsOrder(t *testing.T) {
	st := newOutageStore(t)
	sp := openSpool(t, t.TempDir())
	defer sp.Close()
	l := ledger.NewWithOptions(st, ledger.Options{Spool: sp, RetryEvery: time.Hour})
	l.Close() // no replay until the test says so
	d := newDecider(t, "a", "b")
	st.mode.Store(storeDown)
	first, _ := appendAll(t, l, d, 3, "a")
	st.mode.Store(storeUp)
	second, spooled := appendAll(t, l, d, 3, "a")
	if spooled != 3 {
		t.Fatalf("%d of 3 appends of an agent with spooled entries were spooled", spooled)
	}
	other, spooled := appendAll(t, l, d, 2, "b")
	if spooled != 0 {
		t.Fatalf("%d appends of another agent were spooled", spooled)
	}
	if got := l.Spooled(); got != 6 {
		t.Fatalf("Spooled() = %d, want 6", got)
	}
	l = ledger.NewWithOptions(st, ledger.Options{Spool: sp, RetryEvery: 10 * time.Millisecond})
	defer l.Close()
	waitReplayed(t, l)
	checkChains(t, l, merge(first, second, other))
}

// waitSpoolEmptied waits until the spool's log in dir is back to its size
// when new (empty) and its marks file is gone: the replayer empties the
// spool after a pass that leaves nothing waiting.
func waitSpoolEmptied(t *testing.T, dir string, empty int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		fi, err := os.Stat(filepath.Join(dir, "ledger.log"))
		_, merr := os.Stat(filepath.Join(dir, "replayed"))
		if err == nil && fi.Size() == empty && errors.Is(merr, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool not emptied after 30s: log %v (%v), marks %v", fi, err, merr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Once replayed, the spool's files are emptied while the process runs, and
// the next outage spools into the new log: the spool does not grow from
// one outage to the next.
func TestSpoolEmptiedAfterEachOutage(t *testing.T) {
	st := newOutageStore(t)
	dir := t.TempDir()
	sp := openSpool(t, dir)
	fi, err := os.Stat(filepath.Join(dir, "ledger.log"))
	if err != nil {
		t.Fatal(err)
	}
	empty := fi.Size()
	l := ledger.NewWithOptions(st, ledger.Options{Spool: sp, RetryEvery: 10 * time.Millisecond})
	t.Cleanup(func() { l.Close(); sp.Close() })
	d := newDecider(t, "a", "b")
	var parts []map[string][]string
	for outage := range 3 {
		st.mode.Store(storeDown)
		ids, spooled := appendAll(t, l, d, 10, "a", "b")
		if spooled != 20 {
			t.Fatalf("outage %d: %d of 20 appends spooled", outage, spooled)
		}
		fi, err := os.Stat(filepath.Join(dir, "ledger.log"))
		if err != nil || fi.Size() <= empty {
			t.Fatalf("outage %d: the spool's log is empty during the outage: %v, %v", outage, fi, err)
		}
		st.mode.Store(storeUp)
		waitReplayed(t, l)
		waitSpoolEmptied(t, dir, empty)
		parts = append(parts, ids)
	}
	checkChains(t, l, merge(parts...))
}

// Appends keep coming, some spooled, while outages come and go and the
// replayer empties the spool between them: every decision ends up in its
// agent's chain, in order.
func TestSpoolResetUnderLoad(t *testing.T) {
	l, st, _ := newOutageLedger(t)
	agents := []string{"a", "b", "c", "d"}
	d := newDecider(t, agents...)
	stop := make(chan struct{})
	var toggles sync.WaitGroup
	toggles.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				st.mode.Store(storeUp)
				return
			case <-time.After(15 * time.Millisecond):
			}
			st.mode.Store([]int32{storeDown, storeUp, storeLostReply, storeUp}[i%4])
		}
	})
	var parts []map[string][]string
	for range 8 {
		ids, _ := appendAll(t, l, d, 10, agents...)
		parts = append(parts, ids)
	}
	close(stop)
	toggles.Wait()
	waitReplayed(t, l)
	checkChains(t, l, merge(parts...))
}

// Spooled entries survive the process: a new spool on the same directory
// finds them, a new ledger replays them. A crash between replaying entries
// and recording it (the marks file lost) replays nothing twice.
func TestSpoolSurvivesRestart(t *testing.T) {
	tests := []struct {
		name      string
		loseMarks bool
	}{
		{"clean restart", false},
		{"marks lost after a partial replay", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newOutageStore(t)
			dir := t.TempDir()
			sp := openSpool(t, dir)
			l := ledger.NewWithOptions(st, ledger.Options{Spool: sp, RetryEvery: time.Hour})
			d := newDecider(t, "a", "b")
			st.mode.Store(storeDown)
			l.Close() // the first pass ran at start; no other until an hour
			want, spooled := appendAll(t, l, d, 40, "a", "b")
			if spooled != 80 {
				t.Fatalf("%d of 80 appends spooled", spooled)
			}
			if err := sp.Close(); err != nil {
				t.Fatal(err)
			}

			sp = openSpool(t, dir)
			if got := sp.Pending(); got != 80 {
				t.Fatalf("reopened spool: %d pending, want 80", got)
			}
			st.mode.Store(storeUp)
			if tc.loseMarks {
				// Replay everything, then put back the log as it was
				// (a crash before the replayed spool was emptied) with
				// the marks of a partial replay.
				log, err := os.ReadFile(filepath.Join(dir, "ledger.log"))
				if err != nil {
					t.Fatal(err)
				}
				l = ledger.NewWithOptions(st, ledger.Options{Spool: sp, RetryEvery: 10 * time.Millisecond})
				waitReplayed(t, l)
				l.Close()
				if err := sp.Close(); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "ledger.log"), log, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "replayed"), []byte(`{"a":20}`), 0o600); err != nil {
					t.Fatal(err)
				}
				sp = openSpool(t, dir)
				if got := sp.Pending(); got != 60 {
					t.Fatalf("spool with old marks: %d pending, want 60", got)
				}
			}
			l = ledger.NewWithOptions(st, ledger.Options{Spool: sp, RetryEvery: 10 * time.Millisecond})
			waitReplayed(t, l)
			l.Close()
			checkChains(t, l, want)
			if err := sp.Close(); err != nil {
				t.Fatal(err)
			}
			// Everything replayed: the next open starts an empty spool.
			sp = openSpool(t, dir)
			defer sp.Close()
			if got := sp.Pending(); got != 0 {
				t.Fatalf("spool after a full replay: %d pending", got)
			}
			if _, err := os.Stat(filepath.Join(dir, "replayed")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("marks file left after a full replay: %v", err)
			}
		})
	}
}

// Against a real redis-server that is shut down and restarted: appends
// during the outage are spooled (the breaker stops them waiting), replayed
// once Redis is back, and every chain in Redis is whole and in order.
func TestSpoolRedisOutage(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	store, err := ledger.NewRedisStore(client, ledger.RedisOptions{Prefix: "spool-test:", Timeout: 300 * time.Millisecond,
		Breaker: ledger.BreakerOptions{Failures: 2, OpenFor: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sp := openSpool(t, t.TempDir())
	defer sp.Close()
	l := ledger.NewWithOptions(store, ledger.Options{Spool: sp, RetryEvery: 50 * time.Millisecond})
	defer l.Close()
	d := newDecider(t, "a", "b")

	before, spooled := appendAll(t, l, d, 10, "a", "b")
	if spooled != 0 {
		t.Fatalf("%d appends spooled with Redis up", spooled)
	}
	srv.Stop()
	during, spooled := appendAll(t, l, d, 25, "a", "b")
	if spooled != 50 {
		t.Fatalf("%d of 50 appends spooled with Redis down", spooled)
	}
	if store.Healthy() {
		t.Fatal("the breaker is closed with Redis down")
	}
	srv.Restart()
	waitReplayed(t, l)
	after, _ := appendAll(t, l, d, 5, "a", "b")
	checkChains(t, l, merge(before, during, after))
}
