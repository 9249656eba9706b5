package wire

import "github.com/vigilhq/vigil/governor"

// ArchetypeList is the body of GET /v1/archetypes, sorted by name.
type ArchetypeList struct {
	Archetypes []Archetype `json:"archetypes"`
}

// Archetype names an agent archetype and the prior it uses; Prior is null for
// an archetype without one (general-purpose).
type Archetype struct {
	Name  string `json:"name"`
	Prior *Prior `json:"prior"`
}

// Prior is an archetype's expected behaviour, which seeds a new agent's
// fingerprint.
type Prior struct {
	Name             string  `json:"name"`
	ActionShares     []Share `json:"action_shares"`
	TargetCategories []Share `json:"target_categories"`
	// PeakHours and ActiveHours are hours of the day (UTC).
	PeakHours     []int        `json:"peak_hours"`
	ActiveHours   []int        `json:"active_hours"`
	RateMin       float64      `json:"rate_min"`
	RateMax       float64      `json:"rate_max"`
	OutcomeShares []Share      `json:"outcome_shares"`
	DriftWeights  DriftWeights `json:"drift_weights"`
}

// DriftWeights weigh per-distribution drift into overall drift.
type DriftWeights struct {
	Action   float64 `json:"action"`
	Target   float64 `json:"target"`
	Temporal float64 `json:"temporal"`
	Outcome  float64 `json:"outcome"`
	Semantic float64 `json:"semantic"`
}

// NewArchetype converts a governor archetype for the wire.
func NewArchetype(a governor.Archetype) Archetype {
	out := Archetype{Name: a.Name}
	if p := a.Prior; p != nil {
		out.Prior = &Prior{
			Name:             p.Name,
			ActionShares:     newShares(p.Actions),
			TargetCategories: newShares(p.Targets),
			PeakHours:        ints(p.PeakHours),
			ActiveHours:      ints(p.ActiveHours),
			RateMin:          p.RateMin,
			RateMax:          p.RateMax,
			OutcomeShares:    newShares(p.Outcomes),
			DriftWeights: DriftWeights{
				Action:   p.DriftWeights.Action,
				Target:   p.DriftWeights.Target,
				Temporal: p.DriftWeights.Temporal,
				Outcome:  p.DriftWeights.Outcome,
				Semantic: p.DriftWeights.Semantic,
			},
		}
	}
	return out
}

func ints(s []int) []int {
	out := make([]int, len(s))
	copy(out, s)
	return out
}
