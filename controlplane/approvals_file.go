package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

const approvalsFile = "approvals.ndjson"

var _ ApprovalStore = (*FileStore)(nil)

// approvalLog is the FileStore's approvals: an append-only log,
// approvals.ndjson (mode 0600) in the data directory, created by the first
// approval, one JSON approval per line, each line fsynced before the call returns. Creating an approval
// appends it; deciding appends the decided version, which replaces the
// earlier one when the log is read (the last line of an id wins), so an
// approval takes at most two lines and nothing is rewritten. A last line cut
// short by a crash (a torn tail) is dropped when the store opens; a damaged
// line before it stops the open with ErrCorrupt. Everything is also kept in
// memory, so reads do no I/O. It has its own lock: an fsync of the log does
// not wait on the directives' and events' lock, nor they on it.
type approvalLog struct {
	dir    string
	mu     sync.Mutex
	closed bool
	f      *os.File // nil until the log exists
	size   int64
	byID   map[string]Approval
}

// open reads the log in dir, cutting a torn tail. A missing log is created
// by the first append.
func (l *approvalLog) open(dir string) error {
	l.dir = dir
	l.byID = map[string]Approval{}
	f, err := os.OpenFile(filepath.Join(dir, approvalsFile), os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("controlplane: open approvals: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("controlplane: read approvals: %w", err)
	}
	var good int64
	lineNo := 0
	for rest := data; len(rest) > 0; {
		line, after, complete := bytes.Cut(rest, []byte{'\n'})
		lineNo++
		var a Approval
		if err := json.Unmarshal(line, &a); err != nil || !complete || a.ID == "" {
			if !complete || len(bytes.TrimSpace(after)) == 0 {
				break // the torn tail: dropped below
			}
			f.Close()
			return fmt.Errorf("%w: %s: line %d unreadable", ErrCorrupt, approvalsFile, lineNo)
		}
		l.byID[a.ID] = a
		good += int64(len(line)) + 1
		rest = after
	}
	if good < int64(len(data)) {
		err := f.Truncate(good)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("controlplane: cut torn approvals tail: %w", err)
		}
	}
	l.f, l.size = f, good
	return nil
}

// appendLocked writes a as the log's next line and, once it is durable,
// makes it the approval of its id in memory (under l.mu).
func (l *approvalLog) appendLocked(a Approval) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("controlplane: encode approval %s: %w", a.ID, err)
	}
	var stored Approval // what a reader of the file will see
	if err := json.Unmarshal(b, &stored); err != nil {
		return fmt.Errorf("controlplane: encode approval %s: %w", a.ID, err)
	}
	if l.f == nil {
		f, err := os.OpenFile(filepath.Join(l.dir, approvalsFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("controlplane: create approvals: %w", err)
		}
		if err := syncDir(l.dir); err != nil {
			f.Close()
			return fmt.Errorf("controlplane: create approvals: %w", err)
		}
		l.f = f
	}
	n, err := l.f.Write(append(b, '\n'))
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		if n > 0 {
			// Cut what was written, so the next append starts a clean line.
			_ = l.f.Truncate(l.size)
		}
		return fmt.Errorf("controlplane: append approval %s: %w", a.ID, err)
	}
	l.size += int64(n)
	l.byID[a.ID] = stored
	return nil
}

func (l *approvalLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.f == nil {
		l.closed = true
		return nil
	}
	l.closed = true
	return l.f.Close()
}

// lock takes l.mu unless the store is closed or ctx has ended.
func (l *approvalLog) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// CreateApproval implements ApprovalStore: it appends a to
// approvals.ndjson (see approvalLog: the last line of an id wins on reading,
// so an approval takes at most two lines and nothing is rewritten).
func (s *FileStore) CreateApproval(ctx context.Context, a Approval) error {
	if a.ID == "" {
		return fmt.Errorf("controlplane: approval without an id")
	}
	l := &s.approvals
	if err := l.lock(ctx); err != nil {
		return err
	}
	defer l.mu.Unlock()
	if _, taken := l.byID[a.ID]; taken {
		return fmt.Errorf("%w: approval %s exists", ErrConflict, a.ID)
	}
	return l.appendLocked(a)
}

// GetApproval implements ApprovalStore.
func (s *FileStore) GetApproval(ctx context.Context, id string) (Approval, error) {
	l := &s.approvals
	if err := l.lock(ctx); err != nil {
		return Approval{}, err
	}
	defer l.mu.Unlock()
	a, ok := l.byID[id]
	if !ok {
		return Approval{}, fmt.Errorf("%w: no approval %s", ErrNotFound, id)
	}
	return a.Clone(), nil
}

// DecideApproval implements ApprovalStore.
func (s *FileStore) DecideApproval(ctx context.Context, a Approval) error {
	if err := checkDecided(&a); err != nil {
		return err
	}
	l := &s.approvals
	if err := l.lock(ctx); err != nil {
		return err
	}
	defer l.mu.Unlock()
	cur, ok := l.byID[a.ID]
	if !ok {
		return fmt.Errorf("%w: no approval %s", ErrNotFound, a.ID)
	}
	if !cur.Pending() {
		return fmt.Errorf("%w: approval %s is %s", ErrConflict, a.ID, cur.Status)
	}
	return l.appendLocked(a)
}

// ListApprovals implements ApprovalStore.
func (s *FileStore) ListApprovals(ctx context.Context, status string, limit int) ([]Approval, error) {
	l := &s.approvals
	if err := l.lock(ctx); err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	out := []Approval{}
	for _, a := range l.byID {
		if status == "" || a.Status == status {
			out = append(out, a.Clone())
		}
	}
	return newestFirst(out, limit), nil
}
