package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/test/redistest"
)

// logBuffer collects a snapshotter's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newSnapshotter(t testing.TB, e controlplane.AgentStates, store controlplane.SnapshotStore, interval time.Duration) (*controlplane.Snapshotter, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	s, err := controlplane.NewSnapshotter(e, store, interval, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatalf("NewSnapshotter: %v", err)
	}
	return s, logs
}

// workload is 30 varied actions: reads and writes over a few targets, a
// delete, transfers (human_override for a4), hours apart so the temporal
// dimension moves.
func workload(i int) governor.Action {
	switch {
	case i%10 == 9:
		return governor.Action{Type: "delete", Target: fmt.Sprintf("db/records/%d", i)}
	case i%7 == 6:
		return governor.Action{Type: "transfer", Target: "payments/out", Parameters: map[string]any{"amount": float64(100 * i)}}
	case i%3 == 2:
		return governor.Action{Type: "write", Target: fmt.Sprintf("docs/page-%d", i%4)}
	}
	return governor.Action{Type: "read", Target: fmt.Sprintf("docs/page-%d", i%5)}
}

func evaluate(t testing.TB, e *governor.Engine, agent string, act governor.Action) *governor.Decision {
	t.Helper()
	d, err := e.Evaluate(governor.Request{AgentID: agent, Action: act,
		Context: governor.Context{Instruction: "tidy the docs"}})
	if err != nil {
		t.Fatalf("Evaluate(%s): %v", agent, err)
	}
	return d
}

// statusJSON is the comparison form of an agent's status.
func statusJSON(t testing.TB, e *governor.Engine, agent string) string {
	t.Helper()
	st, err := e.Status(agent)
	if err != nil {
		t.Fatalf("Status(%s): %v", agent, err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSnapshotsSurviveARestart: an engine evaluates 30 actions for two
// agents and flushes; a new engine restoring from the same store reports
// the same status (trust, observations, drift, fingerprint) and decides
// the next action exactly as the original does.
func TestSnapshotsSurviveARestart(t *testing.T) {
	// Each returns the store of the first process and a function that
	// ends it and returns the second process's store on the same data.
	stores := map[string]func(t *testing.T) (controlplane.SnapshotStore, func() controlplane.SnapshotStore){
		"memory": func(*testing.T) (controlplane.SnapshotStore, func() controlplane.SnapshotStore) {
			s := controlplane.NewMemoryStore()
			return s, func() controlplane.SnapshotStore { return s }
		},
		"file": func(t *testing.T) (controlplane.SnapshotStore, func() controlplane.SnapshotStore) {
			dir := filepath.Join(t.TempDir(), "cp")
			first := openFileStore(t, dir)
			return first, func() controlplane.SnapshotStore {
				first.Close()
				return openFileStore(t, dir)
			}
		},
		"redis": func(t *testing.T) (controlplane.SnapshotStore, func() controlplane.SnapshotStore) {
			srv := redistest.Start(t)
			first := openRedisStore(t, redisClient(t, srv), "restart")
			return first, func() controlplane.SnapshotStore {
				first.Close()
				return openRedisStore(t, redisClient(t, srv), "restart") // a new client, as a new process has
			}
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			first, restart := open(t)
			clk := &fakeClock{t: t0}
			e1 := newEngine(t, clk)
			snap1, _ := newSnapshotter(t, e1, first, 0)
			for i := range 30 {
				evaluate(t, e1, "a1", workload(i))
				evaluate(t, e1, "a4", workload(i))
				clk.Advance(47 * time.Minute)
			}
			if n, err := snap1.Flush(context.Background()); err != nil || n != 2 {
				t.Fatalf("Flush: got %d, %v; want 2 agents saved", n, err)
			}
			second := restart()

			e2 := newEngine(t, &fakeClock{t: clk.Now()})
			snap2, logs := newSnapshotter(t, e2, second, 0)
			res, err := snap2.RestoreAll(context.Background())
			if err != nil {
				t.Fatalf("RestoreAll: %v", err)
			}
			if want := (controlplane.RestoreResult{Restored: 2}); res != want {
				t.Fatalf("RestoreAll: got %+v, want %+v\n%s", res, want, logs)
			}
			for _, agent := range []string{"a1", "a4", "a2"} {
				if got, want := statusJSON(t, e2, agent), statusJSON(t, e1, agent); got != want {
					t.Errorf("agent %s after restore:\n got %s\nwant %s", agent, got, want)
				}
			}
			st, _ := e2.Status("a1")
			if st.Observations != 30 || st.Trust == governor.DefaultConfig().TrustBaseline || len(st.Fingerprint.Actions) == 0 {
				t.Errorf("restored a1: observations %d, trust %v, fingerprint %v: want the state of 30 actions", st.Observations, st.Trust, st.Fingerprint)
			}
			if h, _ := e2.DriftHistory("a1"); len(h) == 0 {
				t.Error("restored a1: no drift history")
			}

			// The next decisions are the same on both engines.
			for i, act := range []governor.Action{workload(30), workload(6), {Type: "read", Target: "elsewhere/x"}} {
				for _, agent := range []string{"a1", "a4"} {
					d1, d2 := evaluate(t, e1, agent, act), evaluate(t, e2, agent, act)
					if d1.Verdict != d2.Verdict || d1.UCS != d2.UCS || d1.Tier != d2.Tier {
						t.Errorf("next decision %d of %s: restored engine gave %s UCS %v tier %d, original %s UCS %v tier %d",
							i, agent, d2.Verdict, d2.UCS, d2.Tier, d1.Verdict, d1.UCS, d1.Tier)
					}
				}
			}
			for _, agent := range []string{"a1", "a4"} {
				if got, want := statusJSON(t, e2, agent), statusJSON(t, e1, agent); got != want {
					t.Errorf("agent %s after the next decisions:\n got %s\nwant %s", agent, got, want)
				}
			}
			// A fresh engine (no restore) decides differently: the test
			// compares something.
			fresh := newEngine(t, &fakeClock{t: clk.Now()})
			if statusJSON(t, fresh, "a1") == statusJSON(t, e1, "a1") {
				t.Error("a fresh engine has the same status as the original: the comparison proves nothing")
			}
		})
	}
}

// TestSnapshotterSavesOnlyChanges: a pass saves the agents whose state
// changed since their last save, and nothing else.
func TestSnapshotterSavesOnlyChanges(t *testing.T) {
	clk := &fakeClock{t: t0}
	e := newEngine(t, clk)
	store := controlplane.NewMemoryStore()
	s, _ := newSnapshotter(t, e, store, 0)
	ctx := context.Background()
	flush := func(want int) {
		t.Helper()
		if n, err := s.Flush(ctx); err != nil || n != want {
			t.Errorf("Flush: got %d saved, %v; want %d", n, err, want)
		}
	}
	flush(0) // nothing acted
	evaluate(t, e, "a1", readAct())
	flush(1)
	flush(0)
	// The fixed clock: the evaluation time does not move, the count does.
	evaluate(t, e, "a1", readAct())
	evaluate(t, e, "a2", readAct())
	flush(2)
	if _, err := e.Evaluate(governor.Request{AgentID: "a1", Action: readAct(), DryRun: true}); err != nil {
		t.Fatal(err)
	}
	flush(0) // a dry run changes nothing
	if err := e.CallStarted("a3"); err != nil {
		t.Fatal(err)
	}
	if err := e.CallFinished("a3", governor.CallInterrupted); err != nil {
		t.Fatal(err)
	}
	flush(1) // trust moved without an evaluation
	all, _ := store.LoadSnapshots(ctx)
	if len(all) != 3 {
		t.Errorf("stored snapshots: got %v, want a1, a2, a3", keys(all))
	}

	// A restore counts as saved.
	e2 := newEngine(t, clk)
	s2, _ := newSnapshotter(t, e2, store, 0)
	if _, err := s2.RestoreAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s2.Flush(ctx); err != nil || n != 0 {
		t.Errorf("Flush right after RestoreAll: got %d, %v; want 0", n, err)
	}
}

// failingSnapshots fails every snapshot save until told otherwise.
type failingSnapshots struct {
	*controlplane.MemoryStore
	mu   sync.Mutex
	fail bool
}

func (f *failingSnapshots) SaveSnapshot(ctx context.Context, id string, b []byte) error {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return controlplane.ErrUnavailable
	}
	return f.MemoryStore.SaveSnapshot(ctx, id, b)
}

// TestSnapshotterRetriesFailedSaves: a save that failed is tried again by
// the next pass.
func TestSnapshotterRetriesFailedSaves(t *testing.T) {
	clk := &fakeClock{t: t0}
	e := newEngine(t, clk)
	store := &failingSnapshots{MemoryStore: controlplane.NewMemoryStore(), fail: true}
	s, _ := newSnapshotter(t, e, store, 0)
	evaluate(t, e, "a1", readAct())
	evaluate(t, e, "a2", readAct())
	n, err := s.Flush(context.Background())
	if n != 0 || !errors.Is(err, controlplane.ErrUnavailable) || !strings.Contains(err.Error(), "2 agents not saved") {
		t.Errorf("Flush on a failing store: got %d, %v; want 0 and 2 agents not saved (ErrUnavailable)", n, err)
	}
	store.mu.Lock()
	store.fail = false
	store.mu.Unlock()
	if n, err := s.Flush(context.Background()); n != 2 || err != nil {
		t.Errorf("Flush once the store works: got %d, %v; want 2", n, err)
	}
}

// TestRestoreSkipsBadSnapshots: a snapshot that cannot be decoded or
// restored, or belongs to another agent, is logged and skipped; one of an
// agent that is not configured is skipped; the others are restored.
func TestRestoreSkipsBadSnapshots(t *testing.T) {
	clk := &fakeClock{t: t0}
	src := newEngine(t, clk)
	for range 5 {
		evaluate(t, src, "a1", readAct())
		evaluate(t, src, "a2", readAct())
	}
	snapJSON := func(agent string) []byte {
		s, err := src.Snapshot(agent)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(s)
		return b
	}
	ctx := context.Background()
	store := openFileStore(t, filepath.Join(t.TempDir(), "cp"))
	a2 := snapJSON("a2")
	for id, b := range map[string][]byte{
		"a1":    snapJSON("a1"),
		"a2":    bytes.Replace(a2, []byte(`"version":1`), []byte(`"version":99`), 1), // a future format
		"a3":    []byte(`{"version":1,"agent_id":"a3","sta`),                         // cut short
		"a5":    a2,                                                                  // another agent's
		"ghost": snapJSON("a1"),                                                      // not configured
	} {
		if err := store.SaveSnapshot(ctx, id, b); err != nil {
			t.Fatal(err)
		}
	}
	// A snapshot that decodes but that Restore refuses (trust out of range).
	bad := bytes.Replace(snapJSON("a1"), []byte(`"agent_id":"a1"`), []byte(`"agent_id":"a4"`), 1)
	var doc map[string]any
	if err := json.Unmarshal(bad, &doc); err != nil {
		t.Fatal(err)
	}
	doc["state"].(map[string]any)["trust"] = 7.5
	bad, _ = json.Marshal(doc)
	if err := store.SaveSnapshot(ctx, "a4", bad); err != nil {
		t.Fatal(err)
	}

	e := newEngine(t, clk)
	if err := e.SetContract(governor.Contract{AgentID: "a5", Scope: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	s, logs := newSnapshotter(t, e, store, 0)
	res, err := s.RestoreAll(ctx)
	if err != nil {
		t.Fatalf("RestoreAll: %v", err)
	}
	if want := (controlplane.RestoreResult{Restored: 1, Unknown: 1, Failed: 4}); res != want {
		t.Errorf("RestoreAll: got %+v, want %+v\n%s", res, want, logs)
	}
	if got, want := statusJSON(t, e, "a1"), statusJSON(t, src, "a1"); got != want {
		t.Errorf("a1: got %s, want the restored %s", got, want)
	}
	for _, agent := range []string{"a2", "a3", "a4", "a5"} {
		if st, _ := e.Status(agent); st.Observations != 0 {
			t.Errorf("%s: got %d observations, want a fresh agent", agent, st.Observations)
		}
		if !strings.Contains(logs.String(), "agent="+agent) {
			t.Errorf("log does not name %s:\n%s", agent, logs)
		}
	}
	if !strings.Contains(logs.String(), "agent=ghost") {
		t.Errorf("log does not name the unknown agent:\n%s", logs)
	}
	// The damaged snapshot is replaced when its agent next changes.
	evaluate(t, e, "a3", readAct())
	if n, err := s.Flush(ctx); n != 1 || err != nil {
		t.Fatalf("Flush: got %d, %v; want 1", n, err)
	}
	b, _ := store.LoadSnapshot(ctx, "a3")
	var snap governor.Snapshot
	if err := json.Unmarshal(b, &snap); err != nil || snap.AgentID != "a3" {
		t.Errorf("a3's snapshot after the flush: %v %q", err, snap.AgentID)
	}
}

// TestRestoreAllStoreFailure: a store that cannot list its snapshots makes
// RestoreAll fail, restoring nothing.
func TestRestoreAllStoreFailure(t *testing.T) {
	store := openFileStore(t, filepath.Join(t.TempDir(), "cp"))
	e := newEngine(t, &fakeClock{t: t0})
	s, _ := newSnapshotter(t, e, store, 0)
	store.Close()
	if _, err := s.RestoreAll(context.Background()); !errors.Is(err, controlplane.ErrClosed) {
		t.Errorf("RestoreAll on a closed store: got %v, want ErrClosed", err)
	}
}

// TestSnapshotterRun: Run saves changed agents every interval and returns
// when its context ends.
func TestSnapshotterRun(t *testing.T) {
	e := newEngine(t, &fakeClock{t: t0})
	store := controlplane.NewMemoryStore()
	s, _ := newSnapshotter(t, e, store, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	evaluate(t, e, "a1", readAct())
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := store.LoadSnapshot(context.Background(), "a1"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not save a1 within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: got %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestNewSnapshotterRefuses(t *testing.T) {
	e := newEngine(t, &fakeClock{t: t0})
	if _, err := controlplane.NewSnapshotter(e, controlplane.NewMemoryStore(), -time.Second, nil); err == nil {
		t.Error("negative interval: got nil, want an error")
	}
	if _, err := controlplane.NewSnapshotter(nil, controlplane.NewMemoryStore(), 0, nil); err == nil {
		t.Error("no engine: got nil, want an error")
	}
	if _, err := controlplane.NewSnapshotter(e, nil, 0, nil); err == nil {
		t.Error("no store: got nil, want an error")
	}
}
