package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

const (
	directivesFile = "directives.json"
	eventsFile     = "events.ndjson"
	tempPattern    = ".directives-*.tmp"
)

// FileStore is the embedded Store: two files in a data directory (mode
// 0700). Directives live in directives.json (mode 0600), rewritten whole on
// every save and replaced atomically (temporary file, fsync, rename, fsync of
// the directory), so a crash leaves either the old or the new set. Provenance
// events are appended to events.ndjson (mode 0600), one JSON object per line,
// each fsynced before AppendEvent returns. A last line cut short by a crash
// (a torn tail) is dropped when the store opens; a damaged line before it
// stops the open with ErrCorrupt. The store keeps everything in memory as
// well, so reads do no I/O. Approvals are appended to approvals.ndjson the
// same way, the decided version of an approval after its pending one (see
// CreateApproval).
//
// Only one process may open a directory at a time; nothing enforces it.
type FileStore struct {
	dir string

	mu         sync.Mutex // guards everything below
	closed     bool
	directives map[string]json.RawMessage
	events     []Event
	ev         *os.File
	evSize     int64

	approvals approvalLog // approvals_file.go
}

// directivesDoc is the layout of directives.json.
type directivesDoc struct {
	Directives []json.RawMessage `json:"directives"`
}

// OpenFileStore opens (creating when needed) the store in dir.
func OpenFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("controlplane: create data dir: %w", err)
	}
	s := &FileStore{dir: dir, directives: map[string]json.RawMessage{}}
	if err := s.readDirectives(); err != nil {
		return nil, err
	}
	if err := s.openEvents(); err != nil {
		return nil, err
	}
	if err := s.approvals.open(dir); err != nil {
		s.ev.Close()
		return nil, err
	}
	return s, nil
}

func (s *FileStore) readDirectives() error {
	// Leftovers of a save interrupted before its rename.
	if tmps, err := filepath.Glob(filepath.Join(s.dir, tempPattern)); err == nil {
		for _, t := range tmps {
			_ = os.Remove(t)
		}
	}
	b, err := os.ReadFile(filepath.Join(s.dir, directivesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("controlplane: read directives: %w", err)
	}
	var doc directivesDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, directivesFile, err)
	}
	for i, raw := range doc.Directives {
		var d Directive
		if err := json.Unmarshal(raw, &d); err != nil || d.ID == "" {
			return fmt.Errorf("%w: %s: directive %d unreadable", ErrCorrupt, directivesFile, i)
		}
		s.directives[d.ID] = raw
	}
	return nil
}

func (s *FileStore) openEvents() error {
	f, err := os.OpenFile(filepath.Join(s.dir, eventsFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("controlplane: open events: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("controlplane: read events: %w", err)
	}
	var good int64
	for rest := data; len(rest) > 0; {
		line, after, complete := bytes.Cut(rest, []byte{'\n'})
		var e Event
		if err := json.Unmarshal(line, &e); err != nil || !complete {
			if !complete || len(bytes.TrimSpace(after)) == 0 {
				break // the torn tail: dropped below
			}
			f.Close()
			return fmt.Errorf("%w: %s: line %d unreadable", ErrCorrupt, eventsFile, len(s.events)+1)
		}
		s.events = append(s.events, e)
		good += int64(len(line)) + 1
		rest = after
	}
	if good < int64(len(data)) {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return fmt.Errorf("controlplane: cut torn event tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("controlplane: cut torn event tail: %w", err)
		}
	}
	s.ev, s.evSize = f, good
	return nil
}

// SaveDirective implements Store.
func (s *FileStore) SaveDirective(ctx context.Context, d Directive) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("controlplane: encode directive %s: %w", d.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	old, had := s.directives[d.ID]
	s.directives[d.ID] = b
	if err := s.writeDirectives(); err != nil {
		if had {
			s.directives[d.ID] = old
		} else {
			delete(s.directives, d.ID)
		}
		return err
	}
	return nil
}

// writeDirectives replaces directives.json with the directives in memory.
func (s *FileStore) writeDirectives() error {
	doc := directivesDoc{Directives: make([]json.RawMessage, 0, len(s.directives))}
	for _, id := range slices.Sorted(maps.Keys(s.directives)) {
		doc.Directives = append(doc.Directives, s.directives[id])
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("controlplane: encode directives: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, tempPattern)
	if err != nil {
		return fmt.Errorf("controlplane: write directives: %w", err)
	}
	name := tmp.Name()
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(append(b, '\n'))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, filepath.Join(s.dir, directivesFile))
	}
	if err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("controlplane: write directives: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("controlplane: write directives: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// LoadDirectives implements Store.
func (s *FileStore) LoadDirectives(ctx context.Context) ([]Directive, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	out := make([]Directive, 0, len(s.directives))
	for id, raw := range s.directives {
		var d Directive
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("controlplane: decode directive %s: %w", id, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// AppendEvent implements Store.
func (s *FileStore) AppendEvent(ctx context.Context, e Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("controlplane: encode event %s: %w", e.ID, err)
	}
	var stored Event // what a reader of the file will see
	if err := json.Unmarshal(b, &stored); err != nil {
		return fmt.Errorf("controlplane: encode event %s: %w", e.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	n, err := s.ev.Write(append(b, '\n'))
	if err == nil {
		err = s.ev.Sync()
	}
	if err != nil {
		if n > 0 {
			// Cut what was written, so the next append starts a clean line.
			_ = s.ev.Truncate(s.evSize)
		}
		return fmt.Errorf("controlplane: append event: %w", err)
	}
	s.evSize += int64(n)
	s.events = append(s.events, stored)
	return nil
}

// Events implements Store.
func (s *FileStore) Events(ctx context.Context, f EventFilter) ([]Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	out := []Event{}
	for i := len(s.events) - 1; i >= 0 && (f.Limit <= 0 || len(out) < f.Limit); i-- {
		if f.Match(&s.events[i]) {
			out = append(out, s.events[i].clone())
		}
	}
	return out, nil
}

// Close closes the events file. Closing twice is harmless; other methods
// return ErrClosed afterwards.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(s.ev.Close(), s.approvals.close())
}
