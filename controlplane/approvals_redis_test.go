package controlplane_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/test/redistest"
)

// redisApprovals is one sidecar's override queue on srv under prefix, with
// its own client, store and engine. run starts its Run (the decision
// watch); without it the sidecar learns of decisions only by polling.
func redisApprovals(t testing.TB, srv *redistest.Server, prefix string, cfg controlplane.ApprovalConfig, run bool) *approvalFixture {
	t.Helper()
	f := newApprovals(t, cfg, openRedisStore(t, redisClient(t, srv), prefix), nil)
	if run {
		f.run(t)
	}
	return f
}

// waitSubscribers waits until n clients subscribe to channel.
func waitSubscribers(t testing.TB, srv *redistest.Server, channel string, n int64) {
	t.Helper()
	c := redisClient(t, srv)
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := c.PubSubNumSub(context.Background(), channel).Result()
		if err == nil && got[channel] >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscribers of %s: got %v, %v; want %d", channel, got, err, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A Wait on sidecar B for an approval held on B is released by a decision
// on sidecar A through the Redis signal (polling is off), B's engine lets
// the identical action pass once, and the next one is held again.
func TestApprovalAcrossSidecars(t *testing.T) {
	srv := redistest.Start(t)
	cfg := controlplane.ApprovalConfig{PollInterval: time.Hour}
	a := redisApprovals(t, srv, "two", cfg, true)
	b := redisApprovals(t, srv, "two", cfg, true)
	waitSubscribers(t, srv, "{two}:approvals:decided", 2)

	ap := b.escalate(t)
	ch := waitAsync(context.Background(), b.q, ap.ID)
	time.Sleep(20 * time.Millisecond)
	decided := time.Now()
	got, err := a.q.Decide(context.Background(), ap.ID, true, "alice", "fine")
	if err != nil {
		t.Fatalf("Decide on A: %v", err)
	}
	if got.Status != controlplane.ApprovalApproved {
		t.Fatalf("Decide on A: got %s, want approved", got.Status)
	}
	r := receive(t, ch, 2*time.Second)
	if r.err != nil || r.a.Status != controlplane.ApprovalApproved || r.a.DecidedBy != "alice" {
		t.Fatalf("Wait on B: got %+v, %v; want approved by alice", r.a, r.err)
	}
	t.Logf("Wait on B returned %v after the decision on A", r.at.Sub(decided))
	b.wantAllowedOnce(t)

	// A second decision is refused wherever it is made.
	if _, err := b.q.Decide(context.Background(), ap.ID, false, "bob", ""); err == nil {
		t.Errorf("deciding again on B: got nil, want ErrConflict")
	}
}

// Without anyone waiting, a decision on A reaches B's engine through B's
// watcher alone.
func TestApprovalGrantPropagates(t *testing.T) {
	srv := redistest.Start(t)
	cfg := controlplane.ApprovalConfig{PollInterval: time.Hour}
	a := redisApprovals(t, srv, "grant", cfg, true)
	b := redisApprovals(t, srv, "grant", cfg, true)
	waitSubscribers(t, srv, "{grant}:approvals:decided", 2)

	ap := b.escalate(t)
	if _, err := a.q.Decide(context.Background(), ap.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for d := b.dryRun(t); d.Verdict != governor.Allow; d = b.dryRun(t) {
		if time.Now().After(deadline) {
			t.Fatalf("2s after the decision on A: B still decides %s, want ALLOW", d.Verdict)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.wantAllowedOnce(t)
	a.wantAllowedOnce(t)
}

// B runs no watcher (its signal is missed): its Wait learns of A's
// decision by polling.
func TestApprovalAcrossSidecarsPollFallback(t *testing.T) {
	srv := redistest.Start(t)
	a := redisApprovals(t, srv, "poll", controlplane.ApprovalConfig{}, true)
	b := redisApprovals(t, srv, "poll", controlplane.ApprovalConfig{PollInterval: 100 * time.Millisecond}, false)
	ap := b.escalate(t)
	ch := waitAsync(context.Background(), b.q, ap.ID)
	time.Sleep(20 * time.Millisecond)
	if _, err := a.q.Decide(context.Background(), ap.ID, false, "alice", "no"); err != nil {
		t.Fatal(err)
	}
	r := receive(t, ch, 2*time.Second)
	if r.err != nil || r.a.Status != controlplane.ApprovalDenied {
		t.Fatalf("Wait on B: got %s, %v; want denied", r.a.Status, r.err)
	}
	if d := b.eval(t); d.Verdict != governor.Escalate {
		t.Errorf("retry after a denial: got %s, want ESCALATE", d.Verdict)
	}
}

// After a resubscription (the connection was cut, so decisions may have
// been missed) B grants the approvals decided meanwhile.
func TestApprovalResyncAfterReconnect(t *testing.T) {
	srv := redistest.Start(t)
	cfg := controlplane.ApprovalConfig{PollInterval: time.Hour}
	a := redisApprovals(t, srv, "resync", cfg, true)
	// B's own client, whose connections can be cut and kept from coming
	// back.
	var down atomic.Bool
	dialer := &net.Dialer{}
	bClient := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, ClientName: "sidecar-b",
		MaxRetries: -1, DialTimeout: 100 * time.Millisecond,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if down.Load() {
				return nil, errors.New("test: sidecar B is cut off")
			}
			return dialer.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { _ = bClient.Close() })
	b := newApprovals(t, cfg, openRedisStore(t, bClient, "resync"), nil)
	b.run(t)
	waitSubscribers(t, srv, "{resync}:approvals:decided", 2)
	ap := b.escalate(t)

	// Cut B off and decide meanwhile: the signal is lost to B.
	down.Store(true)
	admin := redisClient(t, srv)
	ctx := context.Background()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name=sidecar-b ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				if err := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err(); err != nil {
					t.Fatalf("CLIENT KILL ID %s: %v", id, err)
				}
				killed++
			}
		}
	}
	if killed == 0 {
		t.Fatalf("no connection of sidecar B in CLIENT LIST:\n%s", list)
	}
	waitSubscribers(t, srv, "{resync}:approvals:decided", 1)
	if _, err := a.q.Decide(ctx, ap.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if d := b.dryRun(t); d.Verdict != governor.Escalate {
		t.Fatalf("while cut off: B decides %s, want ESCALATE (it cannot know yet)", d.Verdict)
	}
	down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for b.dryRun(t).Verdict != governor.Allow {
		if time.Now().After(deadline) {
			t.Fatalf("10s after B is back: it still holds the approved action")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.wantAllowedOnce(t)
}
