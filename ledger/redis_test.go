package ledger_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigilhq/vigil/ledger"
	"github.com/vigilhq/vigil/ledger/ledgertest"
	"github.com/vigilhq/vigil/test/redistest"
)

// openRedis returns a store on client with its own prefix, closed when t
// ends.
func openRedis(t testing.TB, client redis.UniversalClient, prefix string) *ledger.RedisStore {
	t.Helper()
	s, err := ledger.NewRedisStore(client, ledger.RedisOptions{Prefix: prefix})
	if err != nil {
		t.Fatalf("NewRedisStore: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRedisConformance(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	var (
		mu       sync.Mutex
		prefixes = map[ledger.Store]string{}
		n        atomic.Int64
	)
	ledgertest.Run(t, ledgertest.Factory{
		Open: func(t *testing.T) ledger.Store {
			prefix := fmt.Sprintf("conformance:%d:", n.Add(1))
			s := openRedis(t, client, prefix)
			mu.Lock()
			prefixes[s] = prefix
			mu.Unlock()
			return s
		},
		Reopen: func(t *testing.T, s ledger.Store) ledger.Store {
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			mu.Lock()
			prefix := prefixes[s]
			mu.Unlock()
			r := openRedis(t, client, prefix)
			mu.Lock()
			prefixes[r] = prefix
			mu.Unlock()
			return r
		},
	})
}

// appendRec appends a ledgertest record for agent through s.
func appendRec(ctx context.Context, s ledger.Store, agent, verdict, actionID string) (*ledger.Record, error) {
	return s.Append(ctx, agent, func(h ledger.Head) (*ledger.Record, error) {
		return ledgertest.Record(agent, h, verdict, actionID), nil
	})
}

// verifyChain reads agent's whole chain and checks sequences, links and
// hashes; it returns the records.
func verifyChain(t *testing.T, s ledger.Store, agent string) []*ledger.Record {
	t.Helper()
	ctx := context.Background()
	h, err := s.Head(ctx, agent)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	var recs []*ledger.Record
	prev := ledger.ZeroHash
	err = s.Range(ctx, agent, 1, h.Sequence, func(r *ledger.Record) error {
		if want := int64(len(recs) + 1); r.Sequence != want {
			return fmt.Errorf("got sequence %d, want %d (gap or fork)", r.Sequence, want)
		}
		if r.PrevHash != prev {
			return fmt.Errorf("record %d: prev_hash is not the previous record's hash (fork)", r.Sequence)
		}
		if sum := sha256.Sum256(r.Body); hex.EncodeToString(sum[:]) != r.Hash {
			return fmt.Errorf("record %d: hash is not the SHA-256 of the body", r.Sequence)
		}
		prev = r.Hash
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatalf("chain of %s: %v", agent, err)
	}
	if int64(len(recs)) != h.Sequence || prev != h.Hash {
		t.Fatalf("chain of %s ends at %d, head says %d", agent, len(recs), h.Sequence)
	}
	return recs
}

// TestRedisTwoSidecarsOneChain appends for one agent through two stores on
// two clients, as two sidecars would: one linear chain, nothing lost.
func TestRedisTwoSidecarsOneChain(t *testing.T) {
	srv := redistest.Start(t)
	stores := []*ledger.RedisStore{openRedis(t, srv.Client(t), "two:"), openRedis(t, srv.Client(t), "two:")}
	const goroutines, perGoroutine = 4, 50
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		acked    = map[string]int64{} // action id -> sequence returned
		firstErr error
	)
	for si, s := range stores {
		for g := range goroutines {
			wg.Go(func() {
				for i := range perGoroutine {
					id := fmt.Sprintf("s%d-g%d-%d", si, g, i)
					rec, err := appendRec(context.Background(), s, "agent-1", []string{"ALLOW", "DENY"}[i%2], id)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					if err == nil {
						acked[id] = rec.Sequence
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("Append: %v", firstErr)
	}
	const want = 2 * goroutines * perGoroutine
	recs := verifyChain(t, stores[0], "agent-1")
	if len(recs) != want {
		t.Fatalf("chain length: got %d, want %d", len(recs), want)
	}
	for _, r := range recs {
		if seq, ok := acked[r.ActionID]; !ok || seq != r.Sequence {
			t.Errorf("record %d (%s): acknowledged as %d, %v", r.Sequence, r.ActionID, seq, ok)
		}
	}
	denials, err := stores[1].Latest(context.Background(), "agent-1", "DENY", want)
	if err != nil || len(denials) != want/2 {
		t.Errorf("Latest DENY: got %d records, %v; want %d", len(denials), err, want/2)
	}
}

// TestRedisStaleHeadRetries moves the head behind a store's back: the
// script refuses the cached head, and the append is rebuilt on the real one.
func TestRedisStaleHeadRetries(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a, b := openRedis(t, srv.Client(t), "stale:"), openRedis(t, srv.Client(t), "stale:")
	for i := range 3 {
		if _, err := appendRec(ctx, a, "agent-1", "ALLOW", "a"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if _, err := appendRec(ctx, b, "agent-1", "DENY", "b"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	var heads []int64
	rec, err := a.Append(ctx, "agent-1", func(h ledger.Head) (*ledger.Record, error) {
		heads = append(heads, h.Sequence)
		return ledgertest.Record("agent-1", h, "ALLOW", "late"), nil
	})
	if err != nil {
		t.Fatalf("Append on a stale head: %v", err)
	}
	if want := []int64{3, 5}; !slices.Equal(heads, want) {
		t.Errorf("build called on heads %v, want %v (the cached head, then the real one)", heads, want)
	}
	if rec.Sequence != 6 {
		t.Errorf("sequence: got %d, want 6", rec.Sequence)
	}
	verifyChain(t, a, "agent-1")
}

// TestRedisGivesUpOnAHeadThatAlwaysMoves moves the head during every build:
// the append gives up with ErrHeadMoved after a bounded number of attempts,
// and the chain stays linear.
func TestRedisGivesUpOnAHeadThatAlwaysMoves(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a, b := openRedis(t, srv.Client(t), "moving:"), openRedis(t, srv.Client(t), "moving:")
	builds := 0
	_, err := a.Append(ctx, "agent-1", func(h ledger.Head) (*ledger.Record, error) {
		builds++
		if _, err := appendRec(ctx, b, "agent-1", "ALLOW", "b"+strconv.Itoa(builds)); err != nil {
			return nil, err
		}
		return ledgertest.Record("agent-1", h, "ALLOW", "a"), nil
	})
	if !errors.Is(err, ledger.ErrHeadMoved) {
		t.Fatalf("Append: got %v, want ErrHeadMoved", err)
	}
	if builds < 2 || builds > 100 {
		t.Errorf("build calls: got %d, want a bounded retry", builds)
	}
	if recs := verifyChain(t, a, "agent-1"); len(recs) != builds {
		t.Errorf("chain length: got %d, want %d (only the other writer's records)", len(recs), builds)
	}
	if _, err := appendRec(ctx, a, "agent-1", "DENY", "after"); err != nil {
		t.Errorf("Append once the head stays put: %v", err)
	}
}

// TestRedisBadBuildFailsOnlyItself runs concurrent appends of which some
// fail to build: only those fail, and the chain holds every other one.
func TestRedisBadBuildFailsOnlyItself(t *testing.T) {
	srv := redistest.Start(t)
	s := openRedis(t, srv.Client(t), "bad:")
	boom := errors.New("boom")
	var wg sync.WaitGroup
	var failed, ok atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				bad := (g+i)%3 == 0
				_, err := s.Append(context.Background(), "agent-1", func(h ledger.Head) (*ledger.Record, error) {
					switch {
					case bad && i%2 == 0:
						return nil, boom
					case bad:
						return ledgertest.Record("agent-1", ledger.Head{Sequence: h.Sequence + 1, Hash: h.Hash}, "ALLOW", "gap"), nil
					}
					return ledgertest.Record("agent-1", h, "ALLOW", fmt.Sprintf("g%d-%d", g, i)), nil
				})
				switch {
				case bad && err == nil:
					t.Errorf("bad append g%d-%d: got nil error", g, i)
				case !bad && err != nil:
					t.Errorf("good append g%d-%d: %v", g, i, err)
				case bad:
					failed.Add(1)
				default:
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := int64(len(verifyChain(t, s, "agent-1"))); got != ok.Load() {
		t.Errorf("chain length: got %d, want %d (the good appends; %d failed)", got, ok.Load(), failed.Load())
	}
}

func TestRedisCancelledAppend(t *testing.T) {
	srv := redistest.Start(t)
	s := openRedis(t, srv.Client(t), "cancel:")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := appendRec(ctx, s, "agent-1", "ALLOW", "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled context: got %v, want context.Canceled", err)
	}
	if h, err := s.Head(context.Background(), "agent-1"); err != nil || h.Sequence != 0 {
		t.Errorf("head after a cancelled append: got %+v, %v; want 0", h, err)
	}
}

// TestRedisCancelWhileQueued cancels an append that waits behind a batch
// in flight: it returns at once, is never built, and the appends queued
// with it go on.
func TestRedisCancelWhileQueued(t *testing.T) {
	srv := redistest.Start(t)
	s := openRedis(t, srv.Client(t), "queued:")
	release, building := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := s.Append(context.Background(), "agent-1", func(h ledger.Head) (*ledger.Record, error) {
			close(building)
			<-release
			return ledgertest.Record("agent-1", h, "ALLOW", "first"), nil
		})
		first <- err
	}()
	<-building
	ctx, cancel := context.WithCancel(context.Background())
	cancelled, third := make(chan error, 1), make(chan *ledger.Record, 1)
	go func() {
		_, err := s.Append(ctx, "agent-1", func(h ledger.Head) (*ledger.Record, error) {
			t.Error("the cancelled append was built")
			return ledgertest.Record("agent-1", h, "ALLOW", "cancelled"), nil
		})
		cancelled <- err
	}()
	go func() {
		rec, err := appendRec(context.Background(), s, "agent-1", "DENY", "third")
		if err != nil {
			t.Errorf("third Append: %v", err)
		}
		third <- rec
	}()
	time.Sleep(20 * time.Millisecond) // let both queue behind the first
	cancel()
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled Append: got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled Append did not return while the batch before it was in flight")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first Append: %v", err)
	}
	if rec := <-third; rec == nil || rec.Sequence != 2 {
		t.Errorf("third Append: got %+v, want sequence 2", rec)
	}
	verifyChain(t, s, "agent-1")
}

// TestRedisOutage stops Redis between appends: appends fail while it is
// down and continue the chain once it is back.
func TestRedisOutage(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	s := openRedis(t, client, "outage:")
	ctx := context.Background()
	for i := range 3 {
		if _, err := appendRec(ctx, s, "agent-1", "ALLOW", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	if _, err := appendRec(ctx, s, "agent-1", "ALLOW", "down"); err == nil {
		t.Fatal("Append with Redis down: got nil error")
	}
	srv.Restart()
	rec, err := appendRec(ctx, s, "agent-1", "ALLOW", "back")
	if err != nil || rec.Sequence != 4 {
		t.Fatalf("Append after the restart: got %+v, %v; want sequence 4", rec, err)
	}
	verifyChain(t, s, "agent-1")
}

// hashTag returns the part of key Redis Cluster hashes: the text between
// the first '{' and the next '}', if not empty; else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

func TestRedisKeysShareOneHashTag(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	s := openRedis(t, client, "tags:")
	agents := map[string]string{ // agent -> its tag
		"a1":        "a1",
		"team:bot":  "team:bot",
		"we{ir}d%":  "we%7Bir%7Dd%25",
		"":          "%",
		"}{":        "%7D%7B",
		"agent 42 ": "agent 42 ",
	}
	for agent := range agents {
		for _, v := range []string{"ALLOW", "DENY", "ESCALATE"} {
			if _, err := appendRec(ctx, s, agent, v, "x"); err != nil {
				t.Fatalf("Append %q: %v", agent, err)
			}
		}
	}
	keys, err := client.Keys(ctx, "tags:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	perTag := map[string]int{}
	for _, k := range keys {
		if k == "tags:agents" {
			continue
		}
		perTag[hashTag(k)]++
	}
	for agent, tag := range agents {
		// head, entries, and three verdict indexes
		if perTag[tag] != 5 {
			t.Errorf("agent %q: got %d keys tagged {%s}, want 5 (keys: %v)", agent, perTag[tag], tag, keys)
		}
		verifyChain(t, s, agent)
	}
	if len(perTag) != len(agents) {
		t.Errorf("got %d hash tags, want %d: %v", len(perTag), len(agents), perTag)
	}
	got, err := s.Agents(ctx)
	want := slices.Sorted(func(yield func(string) bool) {
		for a := range agents {
			if !yield(a) {
				return
			}
		}
	})
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Agents: got %q, %v; want %q", got, err, want)
	}
}

func TestRedisClosed(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	s := openRedis(t, client, "closed:")
	if _, err := appendRec(ctx, s, "agent-1", "ALLOW", "x"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Append", func() error { _, err := appendRec(ctx, s, "agent-1", "ALLOW", "y"); return err }},
		{"Head", func() error { _, err := s.Head(ctx, "agent-1"); return err }},
		{"Get", func() error { _, err := s.Get(ctx, "agent-1", 1); return err }},
		{"Range", func() error { return s.Range(ctx, "agent-1", 1, 1, func(*ledger.Record) error { return nil }) }},
		{"Latest", func() error { _, err := s.Latest(ctx, "agent-1", "", 1); return err }},
		{"Latest DENY", func() error { _, err := s.Latest(ctx, "agent-1", "DENY", 1); return err }},
		{"Agents", func() error { _, err := s.Agents(ctx); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, ledger.ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", c.name, err)
		}
	}
	if err := client.Ping(ctx).Err(); err != nil {
		t.Errorf("the client after the store's Close: %v (the store must not close it)", err)
	}
}

func TestRedisCorruptRecord(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	s := openRedis(t, client, "corrupt:")
	for i := range 3 {
		if _, err := appendRec(ctx, s, "agent-1", "ALLOW", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, value string
	}{
		{"unknown version", "\x07abc"},
		{"truncated header", "\x01\x40abc"},
		{"no body", "\x01\x00\x00\x00\x00"},
		{"empty", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := client.HSet(ctx, "corrupt:{agent-1}:e", "2", tc.value).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "agent-1", 2); !errors.Is(err, ledger.ErrCorrupt) {
				t.Errorf("Get: got %v, want ErrCorrupt", err)
			}
			err := s.Range(ctx, "agent-1", 1, 3, func(*ledger.Record) error { return nil })
			if !errors.Is(err, ledger.ErrCorrupt) {
				t.Errorf("Range: got %v, want ErrCorrupt", err)
			}
		})
	}
	if err := client.HDel(ctx, "corrupt:{agent-1}:e", "2").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Latest(ctx, "agent-1", "", 5); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Latest over a missing record: got %v, want ErrCorrupt", err)
	}
}

func TestRedisOptions(t *testing.T) {
	cases := []struct {
		name    string
		opts    ledger.RedisOptions
		wantErr bool
	}{
		{"zero value", ledger.RedisOptions{}, false},
		{"defaults", ledger.DefaultRedisOptions(), false},
		{"brace in prefix", ledger.RedisOptions{Prefix: "x{y}:"}, true},
		{"negative batch", ledger.RedisOptions{MaxBatch: -1}, true},
		{"largest batch", ledger.RedisOptions{MaxBatch: 1024}, false},
		{"batch too large for the script", ledger.RedisOptions{MaxBatch: 1025}, true},
	}
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.opts.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate: got %v, want error %v", err, tc.wantErr)
			}
			if _, err := ledger.NewRedisStore(client, tc.opts); (err != nil) != tc.wantErr {
				t.Errorf("NewRedisStore: got %v, want error %v", err, tc.wantErr)
			}
		})
	}
	if _, err := ledger.NewRedisStore(nil, ledger.RedisOptions{}); err == nil {
		t.Error("NewRedisStore(nil client): got nil error")
	}
}

// benchRecord is like ledgertest.Record with a filler member (quoted
// already), the size of a real entry.
func benchRecord(agent string, h ledger.Head, actionID, quotedFiller string) *ledger.Record {
	seq := h.Sequence + 1
	body := `{"action_id":` + strconv.Quote(actionID) + `,"agent_id":` + strconv.Quote(agent) +
		`,"filler":` + quotedFiller + `,"prev_hash":"` + h.Hash + `","sequence":` + strconv.FormatInt(seq, 10) +
		`,"verdict":{"decision":"ALLOW"}}`
	sum := sha256.Sum256([]byte(body))
	return &ledger.Record{AgentID: agent, Sequence: seq, PrevHash: h.Hash, Hash: hex.EncodeToString(sum[:]),
		Verdict: "ALLOW", ActionID: actionID, Body: []byte(body)}
}

// BenchmarkRedisAppendOneAgent runs 8 appenders on one agent against a local
// redis-server; b.N is the total number of appends.
func BenchmarkRedisAppendOneAgent(b *testing.B) {
	const appenders = 8
	srv := redistest.Start(b)
	client := srv.Client(b)
	s := openRedis(b, client, "bench:")
	filler := strconv.Quote(strings.Repeat("x", 5000)) // a 5 KB body
	ctx := context.Background()
	var next atomic.Int64
	lat := make([][]time.Duration, appenders)
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range appenders {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				id := "act_" + strconv.FormatInt(i, 10)
				t0 := time.Now()
				_, err := s.Append(ctx, "agent-1", func(h ledger.Head) (*ledger.Record, error) {
					return benchRecord("agent-1", h, id, filler), nil
				})
				lat[g] = append(lat[g], time.Since(t0))
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-µs")
	}
	if calls := scriptCalls(b, client); calls > 0 {
		b.ReportMetric(float64(b.N)/float64(calls), "appends/call")
	}
}

// scriptCalls returns how many EVALSHA calls the server ran since the last
// CONFIG RESETSTAT.
func scriptCalls(b *testing.B, client redis.UniversalClient) int {
	info, err := client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}
