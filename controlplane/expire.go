package controlplane

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Expire expires an active directive now and undoes its effects (the new
// overlays are published before it returns), recording
// CONTROL.DIRECTIVE_EXPIRED with the operator as actor. Errors: ErrNotFound,
// ErrConflict when it is already expired, ErrDisabled, a *FieldError for an
// empty operator.
func (p *Plane) Expire(ctx context.Context, id, operator string) (Directive, error) {
	if !p.cfg.Enabled {
		return Directive{}, ErrDisabled
	}
	if strings.TrimSpace(operator) == "" {
		return Directive{}, &FieldError{Field: "operator", Msg: "operator is required"}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.all[id]
	if !ok {
		return Directive{}, fmt.Errorf("%w: no directive %s", ErrNotFound, id)
	}
	if !d.Active() {
		return Directive{}, fmt.Errorf("%w: directive %s already expired at %s", ErrConflict, id, d.ExpiredAt.Format(time.RFC3339))
	}
	now := p.now()
	c := d.Clone()
	c.Status, c.ExpiredAt = StatusExpired, now
	if err := p.store.SaveDirective(ctx, c); err != nil {
		return Directive{}, fmt.Errorf("controlplane: save directive %s: %w", id, err)
	}
	p.put(&c, nil)
	p.publish()
	ev := Event{ID: newID("evt_"), Timestamp: now, Actor: operator, ActorType: ActorTypeOperator, Target: id,
		ContextCode: CodeDirectiveExpired, Reason: "expired by an operator",
		Details: map[string]any{"type": string(c.Type), "trigger": "operator", "resolved_agents": c.ResolvedAgents}}
	return c.Clone(), p.record(ctx, []Event{ev})
}

// ExpireDue expires every active directive whose ExpiresAt has come (at or
// before now), undoes their effects and records CONTROL.DIRECTIVE_EXPIRED
// for each with actor "system". It returns the directives it expired. A
// disabled plane has nothing to expire.
func (p *Plane) ExpireDue(ctx context.Context) ([]Directive, error) {
	if !p.cfg.Enabled {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.expireDueLocked(ctx)
}

func (p *Plane) expireDueLocked(ctx context.Context) ([]Directive, error) {
	now := p.now()
	var due []*Directive
	for _, d := range p.active {
		if !d.ExpiresAt.IsZero() && !now.Before(d.ExpiresAt) {
			due = append(due, d)
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	var out []Directive
	var events []Event
	var saveErr error
	for _, d := range due {
		c := d.Clone()
		c.Status, c.ExpiredAt = StatusExpired, now
		if err := p.store.SaveDirective(ctx, c); err != nil {
			saveErr = fmt.Errorf("controlplane: save directive %s: %w", c.ID, err)
			break
		}
		p.put(&c, nil)
		out = append(out, c.Clone())
		events = append(events, Event{ID: newID("evt_"), Timestamp: now, Actor: ActorSystem, ActorType: ActorTypeSystem,
			Target: c.ID, ContextCode: CodeDirectiveExpired, Reason: "duration elapsed",
			Details: map[string]any{"type": string(c.Type), "trigger": "duration", "expires_at": c.ExpiresAt, "resolved_agents": c.ResolvedAgents}})
	}
	if len(out) > 0 {
		p.publish()
	}
	if err := p.record(ctx, events); err != nil {
		return out, err
	}
	return out, saveErr
}
