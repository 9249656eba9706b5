package controlplane

import (
	"slices"

	"github.com/vigilhq/vigil/governor"
)

// Fleet is what the control plane reads of the governed agents to resolve a
// directive's target. *governor.Engine satisfies it.
type Fleet interface {
	// Agents returns the ids of the registered agents.
	Agents() []string
	// Status returns an agent's contract (archetype, team) and drift
	// severity.
	Status(id string) (governor.AgentStatus, error)
}

// Sink receives the overlays the control plane publishes. *governor.Engine
// satisfies it.
type Sink interface {
	SetOverlays(governor.Overlays)
}

// resolve returns the registered agents that every criterion of t selects,
// sorted. Agent ids that are not registered select nothing; an agent whose
// status cannot be read (removed meanwhile) is left out.
func resolve(fleet Fleet, t Target) []string {
	out := []string{}
	for _, id := range fleet.Agents() {
		if len(t.AgentIDs) > 0 && !slices.Contains(t.AgentIDs, id) {
			continue
		}
		if t.Archetype != "" || t.Team != "" || t.DriftStatus != "" {
			st, err := fleet.Status(id)
			if err != nil || !matches(&st, t) {
				continue
			}
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// matches applies the archetype, team and drift status criteria.
func matches(st *governor.AgentStatus, t Target) bool {
	if t.Archetype != "" && st.Contract.Archetype != t.Archetype {
		return false
	}
	if t.Team != "" && st.Contract.Team != t.Team {
		return false
	}
	switch t.DriftStatus {
	case DriftDrifting:
		return st.Severity == governor.SeverityModerate || st.Severity == governor.SeverityHigh || st.Severity == governor.SeverityCritical
	case DriftCritical:
		return st.Severity == governor.SeverityCritical
	}
	return true
}
