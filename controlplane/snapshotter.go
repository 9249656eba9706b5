package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/vigilhq/vigil/governor"
)

// DefaultSnapshotInterval is how often a Snapshotter saves the agents whose
// state changed, unless told otherwise.
const DefaultSnapshotInterval = 5 * time.Second

// AgentStates is what a Snapshotter needs of the governor: the agents,
// their status (to tell which changed) and their snapshots.
// *governor.Engine is one.
type AgentStates interface {
	Agents() []string
	Status(agentID string) (governor.AgentStatus, error)
	Snapshot(agentID string) (*governor.Snapshot, error)
	Restore(s *governor.Snapshot) error
}

var _ AgentStates = (*governor.Engine)(nil)

// Snapshotter persists the agents' governance state (trust, fingerprint,
// window, drift history; governor.Snapshot) in a SnapshotStore, behind the
// hot path: evaluations never wait on it. RestoreAll, before serving, puts
// the stored state back; Run saves, every interval, the agents whose state
// changed since their last save; Flush saves them at once (at shutdown,
// after Run returned).
//
// The governor does not report changes, so the Snapshotter compares a mark
// of each agent's status with the one of its last save: the observation
// count, the time of the last evaluation, trust, the violation count and
// the alerts (how many, how many acknowledged). Every evaluation that is
// not a dry run adds an observation; a change the mark misses (an approval
// granted, say) is saved with the agent's next change. Reading the marks
// costs one Status per agent and interval.
//
// A state saved is at most one interval old; a crash (kill -9) loses what
// changed since the last save, a clean shutdown nothing. On Redis every
// sidecar saves the agents it evaluated, and the last save wins.
type Snapshotter struct {
	states   AgentStates
	store    SnapshotStore
	interval time.Duration
	log      *slog.Logger

	mu    sync.Mutex           // serializes passes; guards marks
	marks map[string]stateMark // per agent, the mark of its stored state
}

// stateMark tells whether an agent's state changed (see Snapshotter).
type stateMark struct {
	observations, violations int
	lastEvaluation           int64 // Unix nanoseconds; 0 for never
	trust                    float64
	alerts, acknowledged     int
}

func markOf(st governor.AgentStatus) stateMark {
	m := stateMark{observations: st.Observations, violations: st.Violations, trust: st.Trust, alerts: len(st.Alerts)}
	if !st.LastEvaluation.IsZero() {
		m.lastEvaluation = st.LastEvaluation.UnixNano()
	}
	for _, a := range st.Alerts {
		if a.Acknowledged {
			m.acknowledged++
		}
	}
	return m
}

// pristine reports whether m is the mark of an agent that never acted.
func (m stateMark) pristine() bool { return m.observations == 0 && m.lastEvaluation == 0 }

// NewSnapshotter returns a snapshotter of states into store, saving every
// interval (0 means DefaultSnapshotInterval); log receives what it skips
// and fails to save (nil: slog.Default). The agents' state as it is now
// counts as saved.
func NewSnapshotter(states AgentStates, store SnapshotStore, interval time.Duration, log *slog.Logger) (*Snapshotter, error) {
	if states == nil || store == nil {
		return nil, errors.New("controlplane: NewSnapshotter needs agent states and a snapshot store")
	}
	if interval < 0 {
		return nil, fmt.Errorf("controlplane: snapshot interval must not be negative, got %v", interval)
	}
	if interval == 0 {
		interval = DefaultSnapshotInterval
	}
	if log == nil {
		log = slog.Default()
	}
	s := &Snapshotter{states: states, store: store, interval: interval, log: log, marks: map[string]stateMark{}}
	s.remark()
	return s, nil
}

// remark records every agent's current state as saved (under s.mu, or
// before s is shared).
func (s *Snapshotter) remark() {
	s.marks = map[string]stateMark{}
	for _, id := range s.states.Agents() {
		if st, err := s.states.Status(id); err == nil {
			s.marks[id] = markOf(st)
		}
	}
}

// RestoreResult counts what RestoreAll did with the stored snapshots.
type RestoreResult struct {
	// Restored is how many agents continue from their snapshot.
	Restored int
	// Unknown is how many snapshots belong to agents that are not
	// registered; they stay in the store.
	Unknown int
	// Failed is how many snapshots could not be read or restored (each is
	// logged); their agents start afresh, and their next save replaces
	// the snapshot.
	Failed int
}

// RestoreAll loads every stored snapshot and restores those of registered
// agents, so that each continues where it stopped. A snapshot of an agent
// that is not registered is skipped, and one that cannot be decoded or
// restored is logged and skipped: neither stops the start. The error is the
// store's, when it cannot list the snapshots; nothing is restored then.
// Call it before the engine evaluates.
func (s *Snapshotter) RestoreAll(ctx context.Context) (RestoreResult, error) {
	var res RestoreResult
	stored, err := s.store.LoadSnapshots(ctx)
	if err != nil {
		return res, fmt.Errorf("controlplane: restore agent state: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	known := map[string]bool{}
	for _, id := range s.states.Agents() {
		known[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(stored)) {
		if !known[id] {
			res.Unknown++
			s.log.Info("agent state snapshot of an agent that is not configured; skipped", "agent", id)
			continue
		}
		var snap governor.Snapshot
		err := json.Unmarshal(stored[id], &snap)
		if err == nil && snap.AgentID != id {
			err = fmt.Errorf("snapshot is of agent %q", snap.AgentID)
		}
		if err == nil {
			err = s.states.Restore(&snap)
		}
		if err != nil {
			res.Failed++
			s.log.Warn("agent state snapshot not restored; the agent starts afresh", "agent", id, "err", err)
			continue
		}
		res.Restored++
	}
	s.remark()
	return res, nil
}

// Run saves the changed agents every interval until ctx ends, and returns
// nil then. A failed save is logged and retried the next interval. Call
// Flush after Run returned to save what changed since its last pass.
func (s *Snapshotter) Run(ctx context.Context) error {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if n, err := s.save(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("agent state not saved; retrying next interval", "saved", n, "err", err)
			}
		}
	}
}

// Flush saves every agent whose state changed since its last save, now. It
// reports how many it saved and, when some could not be saved, how many
// and the first error.
func (s *Snapshotter) Flush(ctx context.Context) (saved int, err error) {
	return s.save(ctx)
}

// save is one pass: it snapshots and saves each changed agent.
func (s *Snapshotter) save(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		errs  []error
		saved int
	)
	agents := s.states.Agents()
	seen := make(map[string]bool, len(agents))
	for _, id := range agents {
		seen[id] = true
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		// The mark is read before the snapshot is taken: a change between
		// the two is in the snapshot and makes the next pass save again.
		st, err := s.states.Status(id)
		if err != nil {
			continue // removed meanwhile
		}
		m := markOf(st)
		if old, ok := s.marks[id]; ok && old == m || !ok && m.pristine() {
			s.marks[id] = m
			continue
		}
		if err := s.saveOne(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		s.marks[id] = m
		saved++
	}
	for id := range s.marks {
		if !seen[id] {
			delete(s.marks, id)
		}
	}
	switch len(errs) {
	case 0:
		return saved, nil
	case 1:
		return saved, errs[0]
	}
	return saved, fmt.Errorf("%d agents not saved, the first: %w", len(errs), errs[0])
}

func (s *Snapshotter) saveOne(ctx context.Context, id string) error {
	snap, err := s.states.Snapshot(id)
	if err != nil {
		return err
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("controlplane: encode snapshot of %q: %w", id, err)
	}
	return s.store.SaveSnapshot(ctx, id, b)
}
