package ledger_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/ledger"
	"github.com/vigilhq/vigil/ledger/ledgertest"
)

// TestCrashChild is the child process of TestFileStoreSurvivesKill: it
// appends until it is killed, printing "ack <agent> <sequence>" after each
// acknowledged append.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("VIGIL_CRASH_DIR")
	if dir == "" {
		t.Skip("child of TestFileStoreSurvivesKill")
	}
	s, err := ledger.OpenFileStore(dir, ledger.FileOptions{Durability: ledger.Durability(os.Getenv("VIGIL_CRASH_MODE"))})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				agent := "agent-" + strconv.Itoa((w+i)%3)
				rec, err := s.Append(context.Background(), agent, func(h ledger.Head) (*ledger.Record, error) {
					return ledgertest.Record(agent, h, "ALLOW", fmt.Sprintf("w%d-%d", w, i)), nil
				})
				if err != nil {
					fmt.Println("append:", err)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %s %d\n", agent, rec.Sequence)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestFileStoreSurvivesKill kills a child process that is appending
// (SIGKILL, at a random moment), reopens the store and checks that every
// acknowledged entry is there and every chain is intact; several rounds on
// the same store.
func TestFileStoreSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, mode := range []ledger.Durability{ledger.DurabilitySync, ledger.DurabilityProcess} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			acked := map[string]int64{}
			for round := range 4 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), "VIGIL_CRASH_DIR="+dir, "VIGIL_CRASH_MODE="+string(mode))
				stdout, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				killAfter := 200 + rand.IntN(800) // acknowledgements before the kill
				sc := bufio.NewScanner(stdout)
				n := 0
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) != 3 || f[0] != "ack" {
						t.Fatalf("round %d: child said %q", round, sc.Text())
					}
					seq, _ := strconv.ParseInt(f[2], 10, 64)
					acked[f[1]] = max(acked[f[1]], seq)
					if n++; n == killAfter {
						_ = cmd.Process.Kill() // SIGKILL
						break
					}
				}
				_ = cmd.Wait()
				s, err := ledger.OpenFileStore(dir, ledger.FileOptions{Durability: mode})
				if err != nil {
					t.Fatalf("round %d: reopen after kill: %v", round, err)
				}
				for agent, want := range acked {
					got := ledgertest.CheckChain(t, s, agent)
					if got < want {
						t.Errorf("round %d: %s has %d entries, but %d were acknowledged", round, agent, got, want)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestFileStoreTornTail cuts or garbles the end of the log the way a crash
// during a write (or a power loss) can, in a log that grew with its writes
// and in one followed by preallocated zeros, and checks that opening cuts
// exactly the torn records and keeps every whole one.
func TestFileStoreTornTail(t *testing.T) {
	// zeroSector zeros the first whole 512-byte sector (aligned in the
	// file) of the frame at st: a sector that never reached the disk.
	zeroSector := func(b []byte, st int) []byte {
		i := (st + 8 + 511) / 512 * 512
		clear(b[i : i+512])
		return b
	}
	cases := []struct {
		name    string
		damage  func(b []byte, starts []int) []byte // starts: each record's offset
		keep    int64                               // entries that must survive
		cutSome bool
	}{
		{"half a frame header", func(b []byte, st []int) []byte { return b[:st[4]+3] }, 4, true},
		{"half a payload", func(b []byte, st []int) []byte { return b[:st[4]+(len(b)-st[4])/2] }, 4, true},
		{"last byte missing", func(b []byte, st []int) []byte { return b[:len(b)-1] }, 4, true},
		{"garbled last record", func(b []byte, st []int) []byte { b[len(b)-5] ^= 0xff; return b }, 4, true},
		{"a sector of the last record missing", func(b []byte, st []int) []byte { return zeroSector(b, st[4]) }, 4, true},
		{"a sector missing, the record after it whole", func(b []byte, st []int) []byte { return zeroSector(b, st[3]) }, 3, true},
		{"zeros appended", func(b []byte, st []int) []byte { return append(b, make([]byte, 100)...) }, 5, false},
		{"intact", func(b []byte, st []int) []byte { return b }, 5, false},
	}
	for _, tc := range cases {
		for _, zeros := range []int{0, 64 << 10} {
			name := tc.name + "/grown"
			if zeros > 0 {
				name = tc.name + "/preallocated"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "ledger.log")
				s, err := ledger.OpenFileStore(dir, ledger.FileOptions{Preallocate: -1})
				if err != nil {
					t.Fatal(err)
				}
				starts := make([]int, 5)
				for i := range 5 {
					st, _ := os.Stat(path)
					starts[i] = int(st.Size())
					if _, err := s.Append(context.Background(), "a", func(h ledger.Head) (*ledger.Record, error) {
						return ledgertest.Record("a", h, "ALLOW", strings.Repeat("x", 1500)+strconv.Itoa(i)), nil
					}); err != nil {
						t.Fatal(err)
					}
				}
				s.Close()
				b, _ := os.ReadFile(path)
				b = append(tc.damage(b, starts), make([]byte, zeros)...)
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
				s, err = ledger.OpenFileStore(dir, ledger.FileOptions{})
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				defer s.Close()
				if got := ledgertest.CheckChain(t, s, "a"); got != tc.keep {
					t.Errorf("entries after open: got %d, want %d", got, tc.keep)
				}
				if cut := s.Recovery().TruncatedBytes > 0; cut != tc.cutSome {
					t.Errorf("torn tail cut: got %v (%d bytes), want %v", cut, s.Recovery().TruncatedBytes, tc.cutSome)
				}
				rec, err := s.Append(context.Background(), "a", func(h ledger.Head) (*ledger.Record, error) {
					return ledgertest.Record("a", h, "DENY", "after"), nil
				})
				if err != nil || rec.Sequence != tc.keep+1 {
					t.Errorf("append after recovery: got %v, %v; want sequence %d", rec, err, tc.keep+1)
				}
			})
		}
	}
}

// TestFileStorePreallocates: while open, a sync-mode log keeps zeroed space
// after its records (a process-mode one does not by default: no append waits
// for its flushes); Close cuts it, and the log reopens with every record and
// nothing reported cut.
func TestFileStorePreallocates(t *testing.T) {
	const ahead = 256 << 10
	for _, tc := range []struct {
		name      string
		opts      ledger.FileOptions
		wantAhead int64 // at least this many bytes of zeros while open
	}{
		{"sync", ledger.FileOptions{Durability: ledger.DurabilitySync, Preallocate: ahead}, ahead},
		{"sync/default", ledger.FileOptions{Durability: ledger.DurabilitySync}, 4 << 20},
		{"process/default", ledger.FileOptions{Durability: ledger.DurabilityProcess}, 0},
		{"process", ledger.FileOptions{Durability: ledger.DurabilityProcess, Preallocate: ahead}, ahead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ledger.log")
			s, err := ledger.OpenFileStore(dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				if _, err := s.Append(context.Background(), "a", func(h ledger.Head) (*ledger.Record, error) {
					return ledgertest.Record("a", h, "ALLOW", strings.Repeat("y", 1000)+strconv.Itoa(i)), nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			// The committer zeroes while idle, after the appends: wait until
			// it has caught up.
			var size int64
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if size = st.Size(); size >= 200*1000+tc.wantAhead {
					break
				}
			}
			if size < 200*1000+tc.wantAhead {
				t.Errorf("log size while open: %d, want records (> 200,000 bytes) plus %d of zeros", size, tc.wantAhead)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 || b[len(b)-1] != '}' {
				t.Errorf("closed log ends in %q, want the last record's body", b[max(0, len(b)-8):])
			}
			if tc.wantAhead == 0 && int64(len(b)) != size {
				t.Errorf("log size: %d while open, %d closed; want no zeros at all", size, len(b))
			}
			s, err = ledger.OpenFileStore(dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := ledgertest.CheckChain(t, s, "a"); got != 200 {
				t.Errorf("entries after reopen: got %d, want 200", got)
			}
			if r := s.Recovery(); r.TruncatedBytes != 0 || r.Records != 200 {
				t.Errorf("recovery: %+v, want 200 records and nothing cut", r)
			}
		})
	}
}

// TestFileStoreRefusesCorruption: damage that is not a torn tail stops the
// open instead of silently dropping acknowledged entries.
func TestFileStoreRefusesCorruption(t *testing.T) {
	dir := t.TempDir()
	s, err := ledger.OpenFileStore(dir, ledger.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Append(context.Background(), "a", func(h ledger.Head) (*ledger.Record, error) {
			return ledgertest.Record("a", h, "ALLOW", strconv.Itoa(i)), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	path := filepath.Join(dir, "ledger.log")
	b, _ := os.ReadFile(path)
	b[len("VIGILLG1")+40] ^= 0x01 // inside the first record
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.OpenFileStore(dir, ledger.FileOptions{}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("open of a log damaged in the middle: got %v, want ErrCorrupt", err)
	}
	if err := os.WriteFile(path, []byte("NOTALOG!xxxxxxxxxxxxxxxxxxxxxxxx"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.OpenFileStore(dir, ledger.FileOptions{}); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("open of a foreign file: got %v, want ErrCorrupt", err)
	}
}

// TestFileStoreRefusesAnEarlyMissingSector: a record missing a sector is a
// torn write only in the last batch; with more than MaxBatch whole records
// after it, it is damage, and the open stops.
func TestFileStoreRefusesAnEarlyMissingSector(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.log")
	opts := ledger.FileOptions{MaxBatch: 2}
	s, err := ledger.OpenFileStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Append(context.Background(), "a", func(h ledger.Head) (*ledger.Record, error) {
			return ledgertest.Record("a", h, "ALLOW", strings.Repeat("z", 1500)+strconv.Itoa(i)), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	clear(b[1024:1536]) // a sector of the first record (the header is 8 bytes, the record ~1.6 KB)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.OpenFileStore(dir, opts); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("open with a sector missing 4 records before the end: got %v, want ErrCorrupt", err)
	}
	opts.MaxBatch = 8 // the same log, when one batch could have held them all: a torn tail
	s, err = ledger.OpenFileStore(dir, opts)
	if err != nil {
		t.Fatalf("open with MaxBatch 8: %v", err)
	}
	defer s.Close()
	if got := ledgertest.CheckChain(t, s, "a"); got != 0 {
		t.Errorf("entries: got %d, want 0 (the first record was torn)", got)
	}
}

func TestFileStorePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "ledger")
	s, err := ledger.OpenFileStore(dir, ledger.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "ledger.log"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: got mode %v, want %v", path, got, want)
		}
	}
}
