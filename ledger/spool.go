package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Spool is the local disk where a Ledger keeps the entries its store could
// not take (ARCHITECTURE.md, failure behaviour: when Redis is unreachable,
// ledger entries go to a local spool and are replayed, in order, when it
// returns, and the chain stays valid). Open it with OpenSpool and give it
// to NewWithOptions; close it after the Ledger.
//
// A spooled entry is the entry's canonical body before sealing: its
// sequence and prev_hash are only known once the store takes it, so the
// replay seals it on the store's head of that moment, exactly as a direct
// append would have. Entries are kept in a FileStore of their own in the
// spool's directory (sync durability: on disk before the call that the
// entry records proceeds; a torn tail is cut on open), one local chain per
// agent, in the order they were spooled. How far each agent's entries were
// replayed is kept in the file "replayed", rewritten atomically after each
// replay pass and every replayMarkEvery entries; after a crash the replay
// starts again from there and skips the entries the store already holds
// (see Ledger). The spool's files are removed, and it starts afresh, when
// it opens with everything replayed and whenever a replay pass leaves
// nothing waiting, so that it does not grow from one outage to the next.
type Spool struct {
	dir string
	fs  *FileStore

	mu     sync.Mutex // guards agents and the marks file
	agents map[string]*spoolAgent
}

// spoolAgent is one agent's spooled entries: sequences done+1..head wait
// for replay; adding counts appends to the spool under way.
type spoolAgent struct {
	mu     sync.Mutex
	head   int64
	done   int64
	adding int
}

// waiting reports whether the agent has entries in the spool or on their
// way there. Called with a.mu held.
func (a *spoolAgent) waiting() bool { return a.adding > 0 || a.head > a.done }

const (
	spoolMarks     = "replayed"
	spoolMarksTemp = "replayed.tmp"
	// replayMarkEvery is how many replayed entries may go unrecorded in the
	// marks file; the replay's duplicate check looks at more of the store's
	// latest entries than that (replayCheckDepth).
	replayMarkEvery  = 32
	replayCheckDepth = 128
)

// OpenSpool opens (or creates) the spool in dir (mode 0700, files 0600).
// When every entry in it was replayed, its files are removed first.
func OpenSpool(dir string) (*Spool, error) {
	fs, err := OpenFileStore(dir, FileOptions{Durability: DurabilitySync, Preallocate: -1})
	if err != nil {
		return nil, fmt.Errorf("ledger spool: %w", err)
	}
	s := &Spool{dir: dir, fs: fs, agents: map[string]*spoolAgent{}}
	marks, err := s.readMarks()
	if err != nil {
		fs.Close()
		return nil, err
	}
	ids, _ := fs.Agents(context.Background())
	pending := false
	for _, id := range ids {
		h, _ := fs.Head(context.Background(), id)
		a := &spoolAgent{head: h.Sequence, done: min(marks[id], h.Sequence)}
		s.agents[id] = a
		pending = pending || a.head > a.done
	}
	if pending {
		return s, nil
	}
	// Everything was replayed (or nothing spooled): start afresh.
	if err := s.startAfresh(); err != nil {
		return nil, err
	}
	s.agents = map[string]*spoolAgent{}
	return s, nil
}

// startAfresh closes the spool's log, removes its files and opens an empty
// one. Called with no entry waiting and none being added (and with s.mu
// held once the spool is shared). The log goes first and its removal is
// made durable before the marks go: marks without a log are ignored on
// the next open, while a log that came back after a crash without its
// marks would be replayed again from its first entry. If a step fails,
// the log is opened again as the directory then holds it (the old one, or
// a new one if it was removed), so that the spool stays usable.
func (s *Spool) startAfresh() error {
	err := s.fs.Close()
	if err == nil {
		err = removeIfExists(filepath.Join(s.dir, fileName))
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err == nil {
		err = removeIfExists(filepath.Join(s.dir, spoolMarks))
	}
	fs, oerr := OpenFileStore(s.dir, FileOptions{Durability: DurabilitySync, Preallocate: -1})
	if oerr == nil {
		s.fs = fs
	}
	if err = errors.Join(err, oerr); err != nil {
		return fmt.Errorf("ledger spool: starting afresh: %w", err)
	}
	return nil
}

// reset starts the spool afresh if no entry waits or is being added, and
// reports whether it did. Every append of a known agent waits meanwhile
// (a few fsyncs, once after each outage). After a failure each agent's
// place in the spool follows the log that is open; if none could be
// opened, appends that need the spool fail until the process restarts.
func (s *Spool) reset() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Every agent's lock is held until the spool is open again: an append
	// that would spool waits, then writes to the new log.
	for _, a := range s.agents {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.waiting() {
			return false, nil
		}
	}
	err := s.startAfresh()
	for id, a := range s.agents {
		if h, herr := s.fs.Head(context.Background(), id); herr == nil {
			a.head, a.done = h.Sequence, min(a.done, h.Sequence)
		}
	}
	return err == nil, err
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Close closes the spool's log. Entries not yet replayed stay on disk for
// the next open.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.writeMarks()
	if cerr := s.fs.Close(); err == nil {
		err = cerr
	}
	return err
}

// Pending returns how many entries wait in the spool (or are being written
// to it).
func (s *Spool) Pending() int64 {
	s.mu.Lock()
	as := slices.Collect(maps.Values(s.agents))
	s.mu.Unlock()
	var n int64
	for _, a := range as {
		a.mu.Lock()
		n += a.head - a.done + int64(a.adding)
		a.mu.Unlock()
	}
	return n
}

// agent returns the agent's state, creating it.
func (s *Spool) agent(agentID string) *spoolAgent {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.agents[agentID]
	if a == nil {
		a = &spoolAgent{}
		s.agents[agentID] = a
	}
	return a
}

// waitingAgents lists the agents with entries to replay, sorted.
func (s *Spool) waitingAgents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id, a := range s.agents {
		a.mu.Lock()
		if a.head > a.done {
			out = append(out, id)
		}
		a.mu.Unlock()
	}
	slices.Sort(out)
	return out
}

// add writes t's unsealed body to the spool as the agent's next spooled
// entry, durably, and returns its spool sequence. The caller has counted
// the add in a.adding.
func (s *Spool) add(ctx context.Context, agentID string, t *template) (int64, error) {
	body := slices.Clone(t.body)
	rec, err := s.fs.Append(ctx, agentID, func(h Head) (*Record, error) {
		return &Record{AgentID: agentID, Sequence: h.Sequence + 1, PrevHash: h.Hash, Hash: hashHex(body),
			Verdict: t.verdict, ActionID: t.actionID, Body: body}, nil
	})
	if err != nil {
		return 0, err
	}
	return rec.Sequence, nil
}

// entry reads the agent's spooled entry seq back as a template.
func (s *Spool) entry(ctx context.Context, agentID string, seq int64) (*template, error) {
	rec, err := s.fs.Get(ctx, agentID, seq)
	if err != nil {
		return nil, fmt.Errorf("ledger spool: %w", err)
	}
	t := &template{agentID: agentID, verdict: rec.Verdict, actionID: rec.ActionID, body: rec.Body}
	var ok1, ok2 bool
	t.prevStart, t.prevEnd, ok1 = topLevelValue(rec.Body, "prev_hash")
	t.seqStart, t.seqEnd, ok2 = topLevelValue(rec.Body, "sequence")
	if !ok1 || !ok2 || t.prevEnd >= t.seqStart || rec.Body[t.prevStart] != '"' {
		return nil, fmt.Errorf("%w: spooled entry %d of %s lacks prev_hash or sequence", ErrCorrupt, seq, agentID)
	}
	return t, nil
}

// saveMarks records how far each agent's entries were replayed.
func (s *Spool) saveMarks() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeMarks()
}

// writeMarks writes the marks file atomically (a temporary file, fsync,
// rename, fsync of the directory). Called with s.mu held.
func (s *Spool) writeMarks() error {
	marks := make(map[string]int64, len(s.agents))
	for id, a := range s.agents {
		a.mu.Lock()
		if a.done > 0 {
			marks[id] = a.done
		}
		a.mu.Unlock()
	}
	raw, err := json.Marshal(marks)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, spoolMarksTemp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("ledger spool: %w", err)
	}
	_, err = f.Write(raw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, spoolMarks))
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return fmt.Errorf("ledger spool: recording the replay: %w", err)
	}
	return nil
}

// readMarks reads the marks file; none is no marks. Marks are ignored when
// the log holds nothing (it was removed after a full replay).
func (s *Spool) readMarks() (map[string]int64, error) {
	raw, err := os.ReadFile(filepath.Join(s.dir, spoolMarks))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger spool: %w", err)
	}
	marks := map[string]int64{}
	if err := json.Unmarshal(raw, &marks); err != nil {
		return nil, fmt.Errorf("%w: ledger spool: the replay marks are unreadable: %v", ErrCorrupt, err)
	}
	return marks, nil
}

// syncDir fsyncs a directory, so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
