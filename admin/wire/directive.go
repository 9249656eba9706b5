package wire

import (
	"time"

	"github.com/vigilhq/vigil/controlplane"
)

// DirectiveRequest is the body of POST /v1/control/directives (API.md
// section 6). Target and Parameters are pointers so that a missing object
// can be told from an empty one; DurationSeconds is null or absent for a
// directive without a duration. Operator, when given, must be the key's
// principal unless the key is an admin's.
type DirectiveRequest struct {
	Type            string               `json:"type"`
	Target          *DirectiveTarget     `json:"target"`
	Reason          string               `json:"reason,omitempty"`
	DurationSeconds *float64             `json:"duration_seconds,omitempty"`
	Parameters      *DirectiveParameters `json:"parameters,omitempty"`
	Operator        string               `json:"operator,omitempty"`
}

// DirectiveTarget selects agents; the criteria given are ANDed. In a
// directive it is written whole: agent_ids [] and "" for the criteria not
// given.
type DirectiveTarget struct {
	AgentIDs    []string `json:"agent_ids"`
	Archetype   string   `json:"archetype"`
	Team        string   `json:"team"`
	DriftStatus string   `json:"drift_status"`
}

// DirectiveParameters are the type-specific parameters of a directive:
// tighten factor, enforce invariants, re_anchor term, broadcast_reminder
// message. A directive lists only its type's (the others take none: {}).
type DirectiveParameters struct {
	Factor     *float64             `json:"factor,omitempty"`
	Invariants []DirectiveInvariant `json:"invariants,omitempty"`
	Term       *string              `json:"term,omitempty"`
	Message    *string              `json:"message,omitempty"`
}

// DirectiveInvariant is one CEL expression over `action` that an enforce
// directive requires to hold; a failed one vetoes the action as
// "invariant:<name>". Message is optional in a request and "" when none.
type DirectiveInvariant struct {
	Name    string `json:"name"`
	Expr    string `json:"expr"`
	Message string `json:"message"`
}

// Directive is the DIRECTIVE object of API.md section 6: one directive,
// active or expired. DurationSeconds, ExpiresAt and ExpiredAt are null when
// not applicable. ReleasedAgents (beyond API.md) are the resolved agents a
// release or relax has taken out of a quarantine or tighten; the directive
// binds resolved_agents minus released_agents.
type Directive struct {
	ID              string              `json:"id"`
	Type            string              `json:"type"`
	Operator        string              `json:"operator"`
	Reason          string              `json:"reason"`
	Target          DirectiveTarget     `json:"target"`
	Parameters      DirectiveParameters `json:"parameters"`
	DurationSeconds *float64            `json:"duration_seconds"`
	Status          string              `json:"status"`
	IssuedAt        string              `json:"issued_at"`
	ExpiresAt       *string             `json:"expires_at"`
	ExpiredAt       *string             `json:"expired_at"`
	ResolvedAgents  []string            `json:"resolved_agents"`
	ReleasedAgents  []string            `json:"released_agents"`
}

// DirectiveResult is the body of a successful POST /v1/control/directives
// (201) and DELETE /v1/control/directives/{directive_id} (200).
type DirectiveResult struct {
	Success   bool      `json:"success"`
	Directive Directive `json:"directive"`
}

// DirectiveList is the body of GET /v1/control/directives: the active
// directives, oldest first.
type DirectiveList struct {
	Directives []Directive `json:"directives"`
}

// ToControlPlane converts r into the control plane's issue request on
// behalf of operator. duration is the already validated duration_seconds (0
// for none).
func (r DirectiveRequest) ToControlPlane(operator string, duration time.Duration) controlplane.IssueRequest {
	req := controlplane.IssueRequest{Type: r.Type, Operator: operator, Reason: r.Reason, Duration: duration}
	if t := r.Target; t != nil {
		req.Target = controlplane.Target{AgentIDs: strsOrNil(t.AgentIDs), Archetype: t.Archetype, Team: t.Team, DriftStatus: t.DriftStatus}
	}
	if p := r.Parameters; p != nil {
		if p.Factor != nil {
			req.Parameters.Factor = *p.Factor
		}
		for _, inv := range p.Invariants {
			req.Parameters.Invariants = append(req.Parameters.Invariants, controlplane.Invariant{Name: inv.Name, Expr: inv.Expr, Message: inv.Message})
		}
		if p.Term != nil {
			req.Parameters.Term = *p.Term
		}
		if p.Message != nil {
			req.Parameters.Message = *p.Message
		}
	}
	return req
}

// NewDirective converts a control plane directive for the wire; its
// parameters are only those of its type.
func NewDirective(d controlplane.Directive) Directive {
	out := Directive{
		ID:       d.ID,
		Type:     string(d.Type),
		Operator: d.Operator,
		Reason:   d.Reason,
		Target: DirectiveTarget{AgentIDs: strs(d.Target.AgentIDs), Archetype: d.Target.Archetype,
			Team: d.Target.Team, DriftStatus: d.Target.DriftStatus},
		Status:         d.Status,
		IssuedAt:       Time(d.IssuedAt),
		ExpiresAt:      OptionalTime(d.ExpiresAt),
		ExpiredAt:      OptionalTime(d.ExpiredAt),
		ResolvedAgents: strs(d.ResolvedAgents),
		ReleasedAgents: strs(d.Released),
	}
	if d.Duration > 0 {
		s := d.Duration.Seconds()
		out.DurationSeconds = &s
	}
	p := d.Parameters
	switch d.Type {
	case controlplane.Tighten, controlplane.Throttle:
		f := p.Factor
		out.Parameters.Factor = &f
	case controlplane.Enforce:
		out.Parameters.Invariants = make([]DirectiveInvariant, len(p.Invariants))
		for i, inv := range p.Invariants {
			out.Parameters.Invariants[i] = DirectiveInvariant{Name: inv.Name, Expr: inv.Expr, Message: inv.Message}
		}
	case controlplane.ReAnchor:
		t := p.Term
		out.Parameters.Term = &t
	case controlplane.BroadcastReminder:
		m := p.Message
		out.Parameters.Message = &m
	}
	return out
}

// NewDirectiveList converts the active directives (never null).
func NewDirectiveList(ds []controlplane.Directive) DirectiveList {
	out := DirectiveList{Directives: make([]Directive, len(ds))}
	for i, d := range ds {
		out.Directives[i] = NewDirective(d)
	}
	return out
}

// strsOrNil copies s, keeping nil (and empty) as nil.
func strsOrNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return strs(s)
}
