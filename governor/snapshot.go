package governor

import (
	"encoding/json"
	"fmt"
	"time"
)

// snapshotVersion is the format of Snapshot; Restore refuses other versions.
const snapshotVersion = 1

// Snapshot is an agent's governance state at one moment: trust and its
// events, the fingerprint and window, drift and its history, alerts and the
// decision history. It is an opaque, versioned JSON document: marshal it to
// persist it, unmarshal and Restore it to continue where the agent stopped.
type Snapshot struct {
	AgentID string
	TakenAt time.Time
	raw     []byte
}

type snapshotDoc struct {
	Version int           `json:"version"`
	AgentID string        `json:"agent_id"`
	TakenAt time.Time     `json:"taken_at"`
	State   snapshotState `json:"state"`
}

type snapshotState struct {
	agentState
	WindowItems []observation  `json:"window"`
	TrustSeries []float64      `json:"trust_series"`
	RecentItems []string       `json:"recent"`
	DeniedItems []deniedAction `json:"denied"`
	TrustEvents []TrustEvent   `json:"trust_events"`
	DriftPoints []DriftPoint   `json:"drift_history"`
	AlertItems  []DriftAlert   `json:"alerts"`
}

// MarshalJSON returns the snapshot document.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	if s.raw == nil {
		return nil, fmt.Errorf("governor: empty snapshot")
	}
	return s.raw, nil
}

// UnmarshalJSON reads a snapshot document; its content is checked by Restore.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var head struct {
		Version int       `json:"version"`
		AgentID string    `json:"agent_id"`
		TakenAt time.Time `json:"taken_at"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("governor: snapshot: %w", err)
	}
	if head.Version != snapshotVersion {
		return fmt.Errorf("governor: snapshot version %d, want %d", head.Version, snapshotVersion)
	}
	s.AgentID, s.TakenAt, s.raw = head.AgentID, head.TakenAt, append([]byte(nil), b...)
	return nil
}

// Snapshot captures an agent's state.
func (e *Engine) Snapshot(agentID string) (*Snapshot, error) {
	a := e.agent(agentID)
	if a == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, agentID)
	}
	now := e.clock().UTC()
	a.mu.Lock()
	st := &a.st
	doc := snapshotDoc{Version: snapshotVersion, AgentID: agentID, TakenAt: now, State: snapshotState{
		agentState:  *st,
		WindowItems: st.Window.items(),
		TrustSeries: st.TrustSeries.items(),
		RecentItems: st.Recent.items(),
		DeniedItems: st.Denied.items(),
		TrustEvents: st.TrustEvents.items(),
		DriftPoints: st.DriftHistory.items(),
		AlertItems:  st.Alerts.items(),
	}}
	raw, err := json.Marshal(doc)
	a.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("governor: snapshot of %q: %w", agentID, err)
	}
	return &Snapshot{AgentID: agentID, TakenAt: now, raw: raw}, nil
}

// Restore replaces a registered agent's state with a snapshot of it.
func (e *Engine) Restore(s *Snapshot) error {
	if s == nil || s.raw == nil {
		return fmt.Errorf("governor: restore: empty snapshot")
	}
	var doc snapshotDoc
	if err := json.Unmarshal(s.raw, &doc); err != nil {
		return fmt.Errorf("governor: restore: %w", err)
	}
	a := e.agent(doc.AgentID)
	if a == nil {
		return fmt.Errorf("%w %q", ErrUnknownAgent, doc.AgentID)
	}
	cfg := &e.cfg
	st := doc.State.agentState
	if st.Trust < cfg.TrustMin || st.Trust > cfg.TrustMax {
		return fmt.Errorf("governor: restore %q: trust %v outside [%v, %v]", doc.AgentID, st.Trust, cfg.TrustMin, cfg.TrustMax)
	}
	if st.Observations < 0 || st.Violations < 0 || st.Decisions < 0 {
		return fmt.Errorf("governor: restore %q: negative counter", doc.AgentID)
	}
	for _, o := range doc.State.WindowItems {
		if o.Hour < 0 || o.Hour > 23 {
			return fmt.Errorf("governor: restore %q: window hour %d out of range", doc.AgentID, o.Hour)
		}
	}
	fresh := newAgentState(cfg)
	st.Window, st.TrustSeries, st.Recent, st.Denied = fresh.Window, fresh.TrustSeries, fresh.Recent, fresh.Denied
	st.TrustEvents, st.DriftHistory, st.Alerts = fresh.TrustEvents, fresh.DriftHistory, fresh.Alerts
	st.TrustEvents.reset(doc.State.TrustEvents)
	st.DriftHistory.reset(doc.State.DriftPoints)
	st.Alerts.reset(doc.State.AlertItems)
	st.Window.reset(doc.State.WindowItems)
	st.TrustSeries.reset(doc.State.TrustSeries)
	st.Recent.reset(doc.State.RecentItems)
	st.Denied.reset(doc.State.DeniedItems)
	if st.Actions == nil {
		st.Actions = fresh.Actions
	}
	if st.Targets == nil {
		st.Targets = fresh.Targets
	}
	if st.Outcomes == nil {
		st.Outcomes = fresh.Outcomes
	}
	if st.Terms == nil {
		st.Terms = fresh.Terms
	}
	for t, ts := range st.Terms {
		if ts == nil {
			delete(st.Terms, t)
		} else if ts.Anchored == nil {
			ts.Anchored = map[string]float64{}
		}
	}
	if st.AppliedReAnchors == nil {
		st.AppliedReAnchors = fresh.AppliedReAnchors
	}
	if st.TypeStats == nil {
		st.TypeStats = fresh.TypeStats
	}
	for t, ts := range st.TypeStats {
		if ts == nil {
			delete(st.TypeStats, t)
		}
	}
	if st.LastOfType == nil {
		st.LastOfType = fresh.LastOfType
	}
	a.mu.Lock()
	a.st = st
	a.mu.Unlock()
	return nil
}
