package controlplane_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/controlplane/controlplanetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	controlplanetest.Run(t, func(*testing.T) controlplane.Store { return controlplane.NewMemoryStore() }, nil)
}

func TestFileStoreConformance(t *testing.T) {
	open, reopen := fileFactory[controlplane.Store]()
	controlplanetest.Run(t, open, reopen)
}

func TestFileStoreFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cp")
	s := openFileStore(t, dir)
	ctx := context.Background()
	if err := s.SaveDirective(ctx, controlplanetest.Directive(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, controlplanetest.Event(1, controlplane.CodeDirectiveIssued, "alice", "x")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want os.FileMode
	}{
		{dir, 0o700 | os.ModeDir},
		{filepath.Join(dir, "directives.json"), 0o600},
		{filepath.Join(dir, "events.ndjson"), 0o600},
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
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("got %d files in the store's directory, want 2 (no temporary file left)", len(entries))
	}
}

func TestFileStoreRecovery(t *testing.T) {
	good := func(t *testing.T, dir string, n int) {
		t.Helper()
		s := openFileStore(t, dir)
		for i := 1; i <= n; i++ {
			if err := s.AppendEvent(context.Background(), controlplanetest.Event(i, controlplane.CodeDirectiveIssued, "alice", "x")); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SaveDirective(context.Background(), controlplanetest.Directive(1)); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	appendBytes := func(t *testing.T, path, b string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(b); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	cases := []struct {
		name       string
		damage     func(t *testing.T, dir string)
		wantErr    error
		wantEvents int
	}{
		{"a torn last line is dropped", func(t *testing.T, dir string) {
			appendBytes(t, filepath.Join(dir, "events.ndjson"), `{"id":"evt_torn","timest`)
		}, nil, 3},
		{"a complete but unreadable last line is dropped", func(t *testing.T, dir string) {
			appendBytes(t, filepath.Join(dir, "events.ndjson"), "\x00\x00\x00\n")
		}, nil, 3},
		{"a damaged line before the end is corruption", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "events.ndjson")
			b, _ := os.ReadFile(path)
			lines := strings.SplitAfter(string(b), "\n")
			lines[1] = "garbage\n"
			os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600)
		}, controlplane.ErrCorrupt, 0},
		{"damaged directives are corruption", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "directives.json"), []byte(`{"directives":[{"id":`), 0o600)
		}, controlplane.ErrCorrupt, 0},
		{"a leftover temporary file is removed", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ".directives-123.tmp"), []byte(`half`), 0o600)
		}, nil, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			good(t, dir, 3)
			tc.damage(t, dir)
			s, err := controlplane.OpenFileStore(dir)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("OpenFileStore: got %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenFileStore: %v", err)
			}
			defer s.Close()
			evs, _ := s.Events(context.Background(), controlplane.EventFilter{})
			if len(evs) != tc.wantEvents {
				t.Errorf("got %d events, want %d", len(evs), tc.wantEvents)
			}
			if ds, _ := s.LoadDirectives(context.Background()); len(ds) != 1 {
				t.Errorf("got %d directives, want 1", len(ds))
			}
			// Appending after recovery starts a clean line and survives a reopen.
			if err := s.AppendEvent(context.Background(), controlplanetest.Event(9, controlplane.CodeDirectiveExpired, "system", "x")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s2 := openFileStore(t, dir)
			evs, _ = s2.Events(context.Background(), controlplane.EventFilter{})
			if len(evs) != tc.wantEvents+1 || evs[0].ID != controlplanetest.Event(9, "", "", "").ID {
				t.Errorf("after an append and a reopen: got %d events (newest %v), want %d with the new one first", len(evs), evs[0].ID, tc.wantEvents+1)
			}
			if tmps, _ := filepath.Glob(filepath.Join(dir, ".directives-*")); len(tmps) != 0 {
				t.Errorf("got temporary files %v, want none", tmps)
			}
		})
	}
}

func TestFileStoreClosed(t *testing.T) {
	s := openFileStore(t, t.TempDir())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: got %v, want nil", err)
	}
	ctx := context.Background()
	checks := map[string]error{
		"SaveDirective":  s.SaveDirective(ctx, controlplanetest.Directive(1)),
		"AppendEvent":    s.AppendEvent(ctx, controlplanetest.Event(1, "", "", "")),
		"LoadDirectives": func() error { _, err := s.LoadDirectives(ctx); return err }(),
		"Events":         func() error { _, err := s.Events(ctx, controlplane.EventFilter{}); return err }(),
	}
	for name, err := range checks {
		if !errors.Is(err, controlplane.ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", name, err)
		}
	}
}
