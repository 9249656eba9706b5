package controlplane

import (
	"fmt"
	"slices"
	"time"
)

// Type is the kind of a directive (API.md section 6).
type Type string

// The directive types.
const (
	// Enforce adds invariants (CEL over action) that every action of the
	// bound agents must satisfy.
	Enforce Type = "enforce"
	// Quarantine forces ESCALATE on every evaluation of the bound agents.
	Quarantine Type = "quarantine"
	// Release ends the quarantine of its agents.
	Release Type = "release"
	// Tighten multiplies the drift thresholds of the bound agents by a factor.
	Tighten Type = "tighten"
	// Relax ends the tightening of its agents.
	Relax Type = "relax"
	// ReAnchor resets the anchored distribution of one instruction term.
	ReAnchor Type = "re_anchor"
	// BroadcastReminder delivers an advisory message with every decision.
	BroadcastReminder Type = "broadcast_reminder"
	// Throttle multiplies the actions_per_minute limit of the bound agents
	// by a factor (0 < factor <= 1). It is not one of the API's types: only
	// Vigil itself issues it (IssueRequest.System), when the policy
	// optimizer's interventions run in auto mode; operators see it, and may
	// expire it, like any other directive.
	Throttle Type = "throttle"
)

// types lists every directive type, in the order of API.md.
var types = []Type{Enforce, Quarantine, Release, Tighten, Relax, ReAnchor, BroadcastReminder}

// ParseType reads a type's wire name, exactly (lower case).
func ParseType(s string) (Type, error) {
	if slices.Contains(types, Type(s)) {
		return Type(s), nil
	}
	return "", fmt.Errorf("unknown directive type %q (want enforce, quarantine, release, tighten, relax, re_anchor or broadcast_reminder)", s)
}

// instantaneous reports whether directives of the type act once, when issued,
// and are recorded expired at once (release, relax).
func (t Type) instantaneous() bool { return t == Release || t == Relax }

// Directive statuses.
const (
	StatusActive  = "active"
	StatusExpired = "expired"
)

// Drift statuses a target may select.
const (
	// DriftDrifting selects agents whose drift severity is moderate or above.
	DriftDrifting = "drifting"
	// DriftCritical selects agents whose drift severity is critical.
	DriftCritical = "critical"
)

// Target selects agents. Every criterion given must hold (they are ANDed);
// at least one must be given.
type Target struct {
	AgentIDs    []string `json:"agent_ids,omitempty"`
	Archetype   string   `json:"archetype,omitempty"`
	Team        string   `json:"team,omitempty"`
	DriftStatus string   `json:"drift_status,omitempty"`
}

func (t Target) empty() bool {
	return len(t.AgentIDs) == 0 && t.Archetype == "" && t.Team == "" && t.DriftStatus == ""
}

// Invariant is one CEL expression over `action` that an enforce directive
// requires to hold; a failed one vetoes the action as "invariant:<Name>".
type Invariant struct {
	Name    string `json:"name"`
	Expr    string `json:"expr"`
	Message string `json:"message,omitempty"`
}

// Parameters are the type-specific parameters of a directive. Each type takes
// only its own: tighten Factor, enforce Invariants, re_anchor Term,
// broadcast_reminder Message; the others take none.
type Parameters struct {
	Factor     float64     `json:"factor,omitempty"`
	Invariants []Invariant `json:"invariants,omitempty"`
	Term       string      `json:"term,omitempty"`
	Message    string      `json:"message,omitempty"`
}

// Directive is one issued directive, active or expired. The Plane hands out
// copies; changing one changes nothing. Its JSON form is the stored form
// (Duration in nanoseconds); the API's DTO is the admin package's.
type Directive struct {
	ID         string     `json:"id"`
	Type       Type       `json:"type"`
	Operator   string     `json:"operator"`
	Reason     string     `json:"reason,omitempty"`
	Target     Target     `json:"target"`
	Parameters Parameters `json:"parameters"`
	// Duration is how long the directive stays active (0: until expired by
	// an operator, or by a release or relax).
	Duration time.Duration `json:"duration,omitempty"`
	// Status is StatusActive or StatusExpired.
	Status   string    `json:"status"`
	IssuedAt time.Time `json:"issued_at"`
	// ExpiresAt is IssuedAt + Duration (zero without a duration).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// ExpiredAt is when the directive expired (zero while active).
	ExpiredAt time.Time `json:"expired_at,omitzero"`
	// ResolvedAgents are the agents the target selected when the directive
	// was issued, sorted.
	ResolvedAgents []string `json:"resolved_agents"`
	// Released are the resolved agents a release (of a quarantine) or a
	// relax (of a tighten) has taken out of the directive, sorted. The
	// directive binds ResolvedAgents minus Released.
	Released []string `json:"released,omitempty"`
}

// Active reports whether the directive is in force.
func (d *Directive) Active() bool { return d.Status == StatusActive }

// Bound returns the agents the directive binds: the resolved agents not
// released, sorted.
func (d *Directive) Bound() []string {
	out := make([]string, 0, len(d.ResolvedAgents))
	for _, a := range d.ResolvedAgents {
		if _, released := slices.BinarySearch(d.Released, a); !released {
			out = append(out, a)
		}
	}
	return out
}

// Clone returns a deep copy of d.
func (d Directive) Clone() Directive {
	d.Target.AgentIDs = slices.Clone(d.Target.AgentIDs)
	d.Parameters.Invariants = slices.Clone(d.Parameters.Invariants)
	d.ResolvedAgents = slices.Clone(d.ResolvedAgents)
	d.Released = slices.Clone(d.Released)
	return d
}

// IssueRequest asks for a directive (the body of POST
// /v1/control/directives). Operator is the principal issuing it.
type IssueRequest struct {
	Type       string
	Operator   string
	Reason     string
	Target     Target
	Parameters Parameters
	// Duration is optional (0: none); it must not be negative.
	Duration time.Duration
	// System marks a request Vigil makes itself (the optimizer): only such
	// a request may issue a throttle.
	System bool
}
