package controlplane_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/controlplane/controlplanetest"
	"github.com/vigilhq/vigil/test/redistest"
)

var (
	_ controlplane.ApprovalStore   = (*controlplane.MemoryStore)(nil)
	_ controlplane.ApprovalStore   = (*controlplane.FileStore)(nil)
	_ controlplane.ApprovalStore   = (*controlplane.RedisStore)(nil)
	_ controlplane.ApprovalWatcher = (*controlplane.RedisStore)(nil)
)

func TestMemoryStoreApprovalConformance(t *testing.T) {
	controlplanetest.RunApprovals(t, func(*testing.T) controlplane.ApprovalStore { return controlplane.NewMemoryStore() }, nil)
}

func TestFileStoreApprovalConformance(t *testing.T) {
	open, reopen := fileFactory[controlplane.ApprovalStore]()
	controlplanetest.RunApprovals(t, open, reopen)
}

func TestRedisStoreApprovalConformance(t *testing.T) {
	open, reopen := redisFactory[controlplane.ApprovalStore](t, "approvals")
	controlplanetest.RunApprovals(t, open, reopen)
}

func TestFileStoreApprovalsTornTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cp")
	s := openFileStore(t, dir)
	ctx := context.Background()
	a := controlplanetest.Approval(1)
	if err := s.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	approved := controlplanetest.Decided(a, controlplane.ApprovalApproved, "alice")
	if err := s.DecideApproval(ctx, approved); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "approvals.ndjson")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("approvals.ndjson: got mode %v, want 0600", fi.Mode().Perm())
	}
	full, _ := os.ReadFile(path)
	// A crash in the middle of a third line.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"apr_torn","agent_id":"a`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s = openFileStore(t, dir)
	got, err := s.GetApproval(ctx, a.ID)
	if err != nil || got.Status != controlplane.ApprovalApproved || got.DecidedBy != "alice" {
		t.Fatalf("after a torn tail: got %+v, %v; want the approved approval", got, err)
	}
	if _, err := s.GetApproval(ctx, "apr_torn"); !errors.Is(err, controlplane.ErrNotFound) {
		t.Errorf("the torn approval: got %v, want ErrNotFound", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(full) {
		t.Errorf("the torn tail was not cut: got %d bytes, want %d", len(b), len(full))
	}
	if err := s.CreateApproval(ctx, controlplanetest.Approval(2)); err != nil {
		t.Errorf("appending after a cut tail: %v", err)
	}
	s.Close()

	// A damaged line that is not the last stops the open.
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append([]byte("{not json}\n"), b...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := controlplane.OpenFileStore(dir); !errors.Is(err, controlplane.ErrCorrupt) {
		t.Errorf("open with a damaged line: got %v, want ErrCorrupt", err)
	}
}

func TestRedisStoreApprovalKeyLayout(t *testing.T) {
	srv := redistest.Start(t)
	client := redisClient(t, srv)
	s := openRedisStore(t, client, "")
	ctx := context.Background()
	sub := client.Subscribe(ctx, "{vigil:cp}:approvals:decided")
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if got := s.ApprovalChannel(); got != "{vigil:cp}:approvals:decided" {
		t.Errorf("ApprovalChannel: got %q", got)
	}
	a := controlplanetest.Approval(1)
	if err := s.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(a)
	if got, err := client.HGet(ctx, "{vigil:cp}:approvals", a.ID).Result(); err != nil || got != string(want) {
		t.Errorf("HGET {vigil:cp}:approvals %s: got %q, %v; want %s", a.ID, got, err, want)
	}
	if ids, err := client.ZRange(ctx, "{vigil:cp}:approvals:pending", 0, -1).Result(); err != nil || len(ids) != 1 || ids[0] != a.ID {
		t.Errorf("pending set: got %v, %v; want [%s]", ids, err, a.ID)
	}
	if err := s.DecideApproval(ctx, controlplanetest.Decided(a, controlplane.ApprovalDenied, "bob")); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.ReceiveTimeout(ctx, 5*time.Second)
	if m, ok := msg.(*redis.Message); err != nil || !ok || m.Payload != a.ID {
		t.Errorf("decision signal: got %#v, %v; want a message carrying %s", msg, err, a.ID)
	}
	if n, err := client.ZCard(ctx, "{vigil:cp}:approvals:pending").Result(); err != nil || n != 0 {
		t.Errorf("pending set after the decision: got %d members, %v; want 0", n, err)
	}
}
