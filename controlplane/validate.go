package controlplane

import (
	"fmt"
	"math"
	"strings"

	"github.com/vigilhq/vigil/governor"
)

// prepared is a validated issue request: its type, the normalized parameters
// and, for enforce, the compiled invariants.
type prepared struct {
	typ      Type
	req      IssueRequest
	compiled []*governor.Invariant
}

// Validate reports the first problem of r as a *FieldError naming the field
// (API.md section 6). It compiles enforce invariants, so it costs what Issue
// would.
func (r *IssueRequest) Validate() error {
	_, err := prepare(*r)
	return err
}

// prepare validates r and returns it ready to apply.
func prepare(r IssueRequest) (*prepared, error) {
	if strings.TrimSpace(r.Operator) == "" {
		return nil, &FieldError{Field: "operator", Msg: "operator is required"}
	}
	typ, err := ParseType(r.Type)
	if r.System && Type(r.Type) == Throttle {
		typ, err = Throttle, nil
	}
	if err != nil {
		return nil, &FieldError{Field: "type", Msg: err.Error()}
	}
	if err := validateTarget(r.Target); err != nil {
		return nil, err
	}
	p := &prepared{typ: typ, req: r}
	if err := p.validateParameters(); err != nil {
		return nil, err
	}
	switch {
	case r.Duration < 0:
		return nil, &FieldError{Field: "duration_seconds", Msg: "must not be negative"}
	case r.Duration > 0 && typ.instantaneous():
		return nil, &FieldError{Field: "duration_seconds", Msg: fmt.Sprintf("%s acts once when issued and takes no duration", typ)}
	}
	return p, nil
}

func validateTarget(t Target) error {
	if t.empty() {
		return &FieldError{Field: "target", Msg: "at least one criterion is required (agent_ids, archetype, team, drift_status)"}
	}
	for i, id := range t.AgentIDs {
		if strings.TrimSpace(id) == "" {
			return &FieldError{Field: fmt.Sprintf("target.agent_ids[%d]", i), Msg: "empty agent id"}
		}
	}
	if t.Archetype != "" {
		if _, err := governor.PriorFor(t.Archetype); err != nil {
			return &FieldError{Field: "target.archetype", Msg: err.Error()}
		}
	}
	switch t.DriftStatus {
	case "", DriftDrifting, DriftCritical:
	default:
		return &FieldError{Field: "target.drift_status", Msg: fmt.Sprintf("unknown drift status %q (want drifting or critical)", t.DriftStatus)}
	}
	return nil
}

// validateParameters checks that the type's own parameters are present and
// valid and that no other parameter is given. It normalizes the re_anchor
// term (trimmed, lower case: anchor terms match case-insensitively).
func (p *prepared) validateParameters() error {
	prm := &p.req.Parameters
	var own string
	switch p.typ {
	case Throttle:
		own = "factor"
		if f := prm.Factor; !(f > 0 && f <= 1) {
			return &FieldError{Field: "parameters.factor", Msg: fmt.Sprintf("throttle requires a factor in (0, 1], got %v", f)}
		}
	case Tighten:
		own = "factor"
		f := prm.Factor
		switch {
		case f == 0:
			return &FieldError{Field: "parameters.factor", Msg: "tighten requires a factor (0 < factor; below 1 is stricter)"}
		case math.IsNaN(f) || math.IsInf(f, 0):
			return &FieldError{Field: "parameters.factor", Msg: "must be a finite number"}
		case f < 0:
			return &FieldError{Field: "parameters.factor", Msg: fmt.Sprintf("must be positive, got %v", f)}
		}
	case Enforce:
		own = "invariants"
		if len(prm.Invariants) == 0 {
			return &FieldError{Field: "parameters.invariants", Msg: "enforce requires a non-empty list of invariants"}
		}
		seen := map[string]bool{}
		for i, inv := range prm.Invariants {
			field := fmt.Sprintf("parameters.invariants[%d]", i)
			if strings.TrimSpace(inv.Name) == "" {
				return &FieldError{Field: field + ".name", Msg: "invariant name is required"}
			}
			if seen[inv.Name] {
				return &FieldError{Field: field + ".name", Msg: fmt.Sprintf("duplicate invariant name %q", inv.Name)}
			}
			seen[inv.Name] = true
			if strings.TrimSpace(inv.Expr) == "" {
				return &FieldError{Field: field + ".expr", Msg: "expression is required"}
			}
			c, err := governor.CompileInvariant(inv.Name, inv.Expr, inv.Message)
			if err != nil {
				return &FieldError{Field: field + ".expr", Msg: err.Error()}
			}
			p.compiled = append(p.compiled, c)
		}
	case ReAnchor:
		own = "term"
		prm.Term = strings.ToLower(strings.TrimSpace(prm.Term))
		if prm.Term == "" {
			return &FieldError{Field: "parameters.term", Msg: "re_anchor requires a term"}
		}
	case BroadcastReminder:
		own = "message"
		if strings.TrimSpace(prm.Message) == "" {
			return &FieldError{Field: "parameters.message", Msg: "broadcast_reminder requires a message"}
		}
	}
	var extra []string
	if own != "factor" && prm.Factor != 0 {
		extra = append(extra, "factor")
	}
	if own != "invariants" && len(prm.Invariants) > 0 {
		extra = append(extra, "invariants")
	}
	if own != "term" && prm.Term != "" {
		extra = append(extra, "term")
	}
	if own != "message" && prm.Message != "" {
		extra = append(extra, "message")
	}
	if len(extra) > 0 {
		takes := "takes no parameters"
		if own != "" {
			takes = "takes only " + own
		}
		return &FieldError{Field: "parameters." + extra[0], Msg: fmt.Sprintf("%s %s (got %s)", p.typ, takes, strings.Join(extra, ", "))}
	}
	return nil
}
