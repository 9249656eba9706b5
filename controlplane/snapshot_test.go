package controlplane_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/controlplane/controlplanetest"
	"github.com/vigilhq/vigil/test/redistest"
)

func TestMemorySnapshotStoreConformance(t *testing.T) {
	controlplanetest.RunSnapshots(t, func(*testing.T) controlplane.SnapshotStore { return controlplane.NewMemoryStore() }, nil)
}

func TestFileSnapshotStoreConformance(t *testing.T) {
	open, reopen := fileFactory[controlplane.SnapshotStore]()
	controlplanetest.RunSnapshots(t, open, reopen)
}

func TestRedisSnapshotStoreConformance(t *testing.T) {
	open, reopen := redisFactory[controlplane.SnapshotStore](t, "snapshots")
	controlplanetest.RunSnapshots(t, open, reopen)
}

func TestRedisSnapshotKeyLayout(t *testing.T) {
	srv := redistest.Start(t)
	client := redisClient(t, srv)
	s := openRedisStore(t, client, "")
	ctx := context.Background()
	if err := s.SaveSnapshot(ctx, "support-bot", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	got, err := client.HGet(ctx, "{vigil:cp}:agents", "support-bot").Result()
	if err != nil || got != `{"v":1}` {
		t.Errorf(`HGET {vigil:cp}:agents support-bot: got %q, %v; want {"v":1}`, got, err)
	}
}

func TestFileSnapshotStoreFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cp")
	s := openFileStore(t, dir)
	ctx := context.Background()
	for _, id := range []string{"support-bot", "team/bot.1"} {
		if err := s.SaveSnapshot(ctx, id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	agents := filepath.Join(dir, "agents")
	cases := []struct {
		path string
		want os.FileMode
	}{
		{agents, 0o700 | os.ModeDir},
		{filepath.Join(agents, "support-bot.json"), 0o600},
		{filepath.Join(agents, "team%2Fbot%2E1.json"), 0o600},
	}
	for _, tc := range cases {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != tc.want {
			t.Errorf("%s: got mode %v, want %v", filepath.Base(tc.path), fi.Mode(), tc.want)
		}
	}

	// A save interrupted before its rename leaves a temporary file, which
	// the next LoadSnapshots removes; files the store did not write are
	// ignored.
	for name, content := range map[string]string{
		".snapshot-123.tmp": `{"half`, "notes.txt": "hello", "bad%zz.json": "{}", "Upper%2f.json": "{}",
	} {
		if err := os.WriteFile(filepath.Join(agents, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.LoadSnapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all["support-bot"] == nil || all["team/bot.1"] == nil {
		t.Errorf("LoadSnapshots: got agents %v, want support-bot and team/bot.1", keys(all))
	}
	if _, err := os.Stat(filepath.Join(agents, ".snapshot-123.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover temporary file: got %v, want it removed", err)
	}

	if _, err := s.LoadSnapshot(ctx, "x"); !errors.Is(err, controlplane.ErrNotFound) {
		t.Errorf("LoadSnapshot of a missing agent: got %v, want ErrNotFound", err)
	}
	if err := s.SaveSnapshot(ctx, string(make([]byte, 300)), []byte(`{}`)); err == nil {
		t.Error("SaveSnapshot with a 300-byte id: got nil, want an error (file name too long)")
	}
	s.Close()
	if err := s.SaveSnapshot(ctx, "a1", []byte(`{}`)); !errors.Is(err, controlplane.ErrClosed) {
		t.Errorf("SaveSnapshot after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.LoadSnapshots(ctx); !errors.Is(err, controlplane.ErrClosed) {
		t.Errorf("LoadSnapshots after Close: got %v, want ErrClosed", err)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
