package wire

import (
	"maps"

	"github.com/vigilhq/vigil/controlplane"
)

// ProvenanceList is the body of GET /v1/provenance: the events the filters
// select, newest first.
type ProvenanceList struct {
	Events []ProvenanceEvent `json:"events"`
}

// ProvenanceEvent is one provenance event (API.md section 11): who (actor,
// of actor_type "operator" or "system") did what (context_code, e.g.
// CONTROL.DIRECTIVE_ISSUED) to which subject (target, e.g. a directive id),
// and why. Details depend on the context code; it is always an object.
type ProvenanceEvent struct {
	ID          string         `json:"id"`
	Timestamp   string         `json:"timestamp"`
	Actor       string         `json:"actor"`
	ActorType   string         `json:"actor_type"`
	Target      string         `json:"target"`
	ContextCode string         `json:"context_code"`
	Reason      string         `json:"reason"`
	Details     map[string]any `json:"details"`
}

// NewProvenanceList converts control plane events (never null).
func NewProvenanceList(events []controlplane.Event) ProvenanceList {
	out := ProvenanceList{Events: make([]ProvenanceEvent, len(events))}
	for i, e := range events {
		details := maps.Clone(e.Details)
		if details == nil {
			details = map[string]any{}
		}
		out.Events[i] = ProvenanceEvent{ID: e.ID, Timestamp: Time(e.Timestamp), Actor: e.Actor, ActorType: e.ActorType,
			Target: e.Target, ContextCode: e.ContextCode, Reason: e.Reason, Details: details}
	}
	return out
}
