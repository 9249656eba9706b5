package controlplane

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	"time"
)

// Context codes of the provenance events the control plane records
// (API.md section 11).
const (
	// CodeDirectiveIssued: a directive was issued (actor: its operator;
	// target: its id).
	CodeDirectiveIssued = "CONTROL.DIRECTIVE_ISSUED"
	// CodeDirectiveExpired: a directive expired, by an operator (DELETE) or
	// because its duration elapsed (actor "system").
	CodeDirectiveExpired = "CONTROL.DIRECTIVE_EXPIRED"
	// CodeDirectiveReleased: a release or relax took the last of a
	// quarantine's or tighten's agents out of it, which expired it (actor:
	// the operator of the release or relax).
	CodeDirectiveReleased = "CONTROL.DIRECTIVE_RELEASED"
)

// Actor types of provenance events.
const (
	ActorTypeOperator = "operator"
	ActorTypeSystem   = "system"
)

// ActorSystem is the actor of what the control plane does on its own
// (expiry of a directive whose duration elapsed).
const ActorSystem = "system"

// Event is one provenance event: who did what to which subject, and why.
type Event struct {
	ID          string         `json:"id"`
	Timestamp   time.Time      `json:"timestamp"`
	Actor       string         `json:"actor"`
	ActorType   string         `json:"actor_type"`
	Target      string         `json:"target"`
	ContextCode string         `json:"context_code"`
	Reason      string         `json:"reason"`
	Details     map[string]any `json:"details"`
}

// EventFilter selects provenance events. Empty fields match everything;
// Limit <= 0 means no limit.
type EventFilter struct {
	ContextCode string
	Actor       string
	Target      string
	Limit       int
}

// Match reports whether e passes the filter's criteria (Limit aside).
func (f EventFilter) Match(e *Event) bool {
	return (f.ContextCode == "" || e.ContextCode == f.ContextCode) &&
		(f.Actor == "" || e.Actor == f.Actor) &&
		(f.Target == "" || e.Target == f.Target)
}

// clone returns a copy of e with its own Details map (values are shared).
func (e Event) clone() Event {
	e.Details = maps.Clone(e.Details)
	return e
}

// NewEvent returns a provenance event with a new id, stamped now (UTC), for
// the components outside this package that record what they do (the
// proxy's interruptions, the optimizer's interventions).
func NewEvent(actor, actorType, target, code, reason string, details map[string]any) Event {
	return Event{ID: newID("evt_"), Timestamp: time.Now().UTC(), Actor: actor, ActorType: actorType,
		Target: target, ContextCode: code, Reason: reason, Details: details}
}

// newID returns prefix and 16 random hex digits.
func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b[:])
}
