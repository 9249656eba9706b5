package controlplanetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/controlplane"
)

// OpenSnapshots returns a new, empty snapshot store; it registers its own
// cleanup.
type OpenSnapshots func(t *testing.T) controlplane.SnapshotStore

// ReopenSnapshots closes s and opens the same underlying data again.
type ReopenSnapshots func(t *testing.T, s controlplane.SnapshotStore) controlplane.SnapshotStore

// RunSnapshots runs the SnapshotStore suite against the stores open
// returns. reopen may be nil for a store that keeps nothing across a
// reopen; the reopen case is then skipped.
func RunSnapshots(t *testing.T, open OpenSnapshots, reopen ReopenSnapshots) {
	t.Run("Empty", func(t *testing.T) { testSnapshotsEmpty(t, open) })
	t.Run("SaveAndLoad", func(t *testing.T) { testSnapshotsSaveLoad(t, open) })
	t.Run("Replace", func(t *testing.T) { testSnapshotsReplace(t, open) })
	t.Run("AgentIDs", func(t *testing.T) { testSnapshotsIDs(t, open) })
	t.Run("EmptyAgentID", func(t *testing.T) { testSnapshotsEmptyID(t, open) })
	t.Run("CallerOwnsBytes", func(t *testing.T) { testSnapshotsCopy(t, open) })
	t.Run("ManyAgents", func(t *testing.T) { testSnapshotsMany(t, open) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testSnapshotsConcurrent(t, open) })
	t.Run("Reopen", func(t *testing.T) {
		if reopen == nil {
			t.Skip("the store keeps nothing across a reopen")
		}
		testSnapshotsReopen(t, open, reopen)
	})
}

// Snapshot returns a stand-in for a snapshot document of agentID (n
// varies it). Stores keep the bytes they are given without reading them.
func Snapshot(agentID string, n int) []byte {
	return fmt.Appendf(nil, `{"version":1,"agent_id":%q,"taken_at":"2025-03-03T09:30:00Z","state":{"n":%d,"pad":%q}}`,
		agentID, n, strings.Repeat("x", n%7*100))
}

func saveSnapshot(t *testing.T, s controlplane.SnapshotStore, id string, b []byte) {
	t.Helper()
	if err := s.SaveSnapshot(context.Background(), id, b); err != nil {
		t.Fatalf("SaveSnapshot(%q): %v", id, err)
	}
}

func loadSnapshots(t *testing.T, s controlplane.SnapshotStore) map[string][]byte {
	t.Helper()
	all, err := s.LoadSnapshots(context.Background())
	if err != nil {
		t.Fatalf("LoadSnapshots: %v", err)
	}
	return all
}

func wantSnapshots(t *testing.T, s controlplane.SnapshotStore, want map[string][]byte) {
	t.Helper()
	got := loadSnapshots(t, s)
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("LoadSnapshots: got agents %q, want %q (or different bytes)", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for id, w := range want {
		b, err := s.LoadSnapshot(context.Background(), id)
		if err != nil {
			t.Errorf("LoadSnapshot(%q): %v", id, err)
		} else if !bytes.Equal(b, w) {
			t.Errorf("LoadSnapshot(%q): got %q, want %q", id, b, w)
		}
	}
}

func testSnapshotsEmpty(t *testing.T, open OpenSnapshots) {
	s := open(t)
	if all := loadSnapshots(t, s); len(all) != 0 {
		t.Errorf("LoadSnapshots of an empty store: got %d, want 0", len(all))
	}
	if _, err := s.LoadSnapshot(context.Background(), "a1"); !errors.Is(err, controlplane.ErrNotFound) {
		t.Errorf("LoadSnapshot of a missing agent: got %v, want ErrNotFound", err)
	}
}

func testSnapshotsSaveLoad(t *testing.T, open OpenSnapshots) {
	s := open(t)
	want := map[string][]byte{}
	for i, id := range []string{"a1", "a2", "support-bot"} {
		want[id] = Snapshot(id, i)
		saveSnapshot(t, s, id, want[id])
	}
	want["big"] = Snapshot("big", 1)
	want["big"] = append(want["big"][:len(want["big"])-2], []byte(`,"x":"`+strings.Repeat("y", 1<<20)+`"}}`)...)
	saveSnapshot(t, s, "big", want["big"])
	want["opaque"] = []byte("not JSON at all \x00\xff")
	saveSnapshot(t, s, "opaque", want["opaque"])
	wantSnapshots(t, s, want)
	if _, err := s.LoadSnapshot(context.Background(), "a3"); !errors.Is(err, controlplane.ErrNotFound) {
		t.Errorf("LoadSnapshot of a missing agent: got %v, want ErrNotFound", err)
	}
}

func testSnapshotsReplace(t *testing.T, open OpenSnapshots) {
	s := open(t)
	saveSnapshot(t, s, "a1", Snapshot("a1", 1))
	saveSnapshot(t, s, "a2", Snapshot("a2", 1))
	saveSnapshot(t, s, "a1", Snapshot("a1", 2))
	saveSnapshot(t, s, "a1", Snapshot("a1", 3))
	wantSnapshots(t, s, map[string][]byte{"a1": Snapshot("a1", 3), "a2": Snapshot("a2", 1)})
}

// testSnapshotsIDs: ids that are awkward as file names or keys are kept
// apart and read back as they were.
func testSnapshotsIDs(t *testing.T, open OpenSnapshots) {
	s := open(t)
	ids := []string{"a.b", "a%2Eb", "..", ".", "team/bot", "bot:1", "Bot", "bot", "ünïcode", "with space", "a*b?c", strings.Repeat("z", 60)}
	want := map[string][]byte{}
	for i, id := range ids {
		want[id] = Snapshot(id, i)
		saveSnapshot(t, s, id, want[id])
	}
	wantSnapshots(t, s, want)
}

func testSnapshotsEmptyID(t *testing.T, open OpenSnapshots) {
	s := open(t)
	if err := s.SaveSnapshot(context.Background(), "", Snapshot("", 1)); err == nil {
		t.Error("SaveSnapshot with an empty agent id: got nil, want an error")
	}
	if all := loadSnapshots(t, s); len(all) != 0 {
		t.Errorf("LoadSnapshots: got %d after a refused save, want 0", len(all))
	}
}

func testSnapshotsCopy(t *testing.T, open OpenSnapshots) {
	s := open(t)
	b := Snapshot("a1", 1)
	want := bytes.Clone(b)
	saveSnapshot(t, s, "a1", b)
	b[0] = 'X' // the caller's buffer is its own after the save
	got, err := s.LoadSnapshot(context.Background(), "a1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("LoadSnapshot after the caller changed its buffer: got %q, want %q", got, want)
	}
	got[0] = 'Y' // and what a load returns is the caller's
	wantSnapshots(t, s, map[string][]byte{"a1": want})
}

// testSnapshotsMany: more agents than a store may read in one page.
func testSnapshotsMany(t *testing.T, open OpenSnapshots) {
	s := open(t)
	want := map[string][]byte{}
	for i := range 300 {
		id := fmt.Sprintf("agent-%03d", i)
		want[id] = Snapshot(id, i)
		saveSnapshot(t, s, id, want[id])
	}
	wantSnapshots(t, s, want)
}

func testSnapshotsConcurrent(t *testing.T, open OpenSnapshots) {
	s := open(t)
	const writers, rounds = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				// Two writers per agent: each agent ends with one of the
				// last writes to it.
				id := fmt.Sprintf("agent-%d", w%4)
				if err := s.SaveSnapshot(context.Background(), id, Snapshot(id, r)); err != nil {
					t.Errorf("SaveSnapshot(%s): %v", id, err)
					return
				}
				if _, err := s.LoadSnapshots(context.Background()); err != nil {
					t.Errorf("LoadSnapshots: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	all := loadSnapshots(t, s)
	if len(all) != 4 {
		t.Fatalf("LoadSnapshots: got %d agents, want 4", len(all))
	}
	for id, b := range all {
		if !bytes.Equal(b, Snapshot(id, rounds-1)) {
			t.Errorf("agent %s: got %.80q, want the last round's snapshot", id, b)
		}
	}
}

func testSnapshotsReopen(t *testing.T, open OpenSnapshots, reopen ReopenSnapshots) {
	s := open(t)
	want := map[string][]byte{"a1": Snapshot("a1", 1), "team/bot": Snapshot("team/bot", 2)}
	for id, b := range want {
		saveSnapshot(t, s, id, b)
	}
	saveSnapshot(t, s, "a1", Snapshot("a1", 3))
	want["a1"] = Snapshot("a1", 3)
	s = reopen(t, s)
	wantSnapshots(t, s, want)
	saveSnapshot(t, s, "a2", Snapshot("a2", 4))
	want["a2"] = Snapshot("a2", 4)
	wantSnapshots(t, s, want)
}
