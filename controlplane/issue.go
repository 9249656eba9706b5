package controlplane

import (
	"context"
	"fmt"
	"slices"
)

// Issue validates req (a *FieldError names the offending field), resolves its
// target against the fleet, applies it, persists it, records
// CONTROL.DIRECTIVE_ISSUED and publishes the new overlays; the next
// evaluation of each bound agent sees it. It returns the directive as
// issued, or ErrDisabled.
//
// Quarantine, tighten, enforce, re_anchor and broadcast_reminder directives
// become active and bind their resolved agents. A release (relax) acts once:
// its resolved agents are taken out of every active quarantine (tighten)
// directive that binds them, and such a directive left binding nobody is
// expired, recording CONTROL.DIRECTIVE_RELEASED; the release (relax) itself
// is recorded already expired.
//
// When the store fails after the directive was saved (recording its event),
// Issue returns the directive, which is in force, together with the error.
func (p *Plane) Issue(ctx context.Context, req IssueRequest) (Directive, error) {
	if !p.cfg.Enabled {
		return Directive{}, ErrDisabled
	}
	pr, err := prepare(req)
	if err != nil {
		return Directive{}, err
	}
	r := &pr.req
	resolved := resolve(p.fleet, r.Target)
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	d := &Directive{
		ID: newID("dir_"), Type: pr.typ, Operator: r.Operator, Reason: r.Reason,
		Target:     Target{AgentIDs: slices.Clone(r.Target.AgentIDs), Archetype: r.Target.Archetype, Team: r.Target.Team, DriftStatus: r.Target.DriftStatus},
		Parameters: Parameters{Factor: r.Parameters.Factor, Invariants: slices.Clone(r.Parameters.Invariants), Term: r.Parameters.Term, Message: r.Parameters.Message},
		Duration:   r.Duration, Status: StatusActive, IssuedAt: now,
		ResolvedAgents: resolved,
	}
	if d.Duration > 0 {
		d.ExpiresAt = now.Add(d.Duration)
	}
	details := map[string]any{"type": string(d.Type), "resolved_agents": d.ResolvedAgents}
	events := []Event{{}} // the issue event comes first; filled in below
	var changed []*Directive
	if d.Type.instantaneous() {
		d.Status, d.ExpiredAt = StatusExpired, now
		changed = p.releaseFrom(d)
		var from []string
		for _, c := range changed {
			from = append(from, c.ID)
			if !c.Active() {
				events = append(events, Event{ID: newID("evt_"), Timestamp: now, Actor: d.Operator, ActorType: ActorTypeOperator,
					Target: c.ID, ContextCode: CodeDirectiveReleased, Reason: d.Reason,
					Details: map[string]any{"type": string(c.Type), "released_by": d.ID, "released_agents": c.Released}})
			}
		}
		details["released_from"] = from
	}
	events[0] = Event{ID: newID("evt_"), Timestamp: now, Actor: d.Operator, ActorType: ActorTypeOperator,
		Target: d.ID, ContextCode: CodeDirectiveIssued, Reason: d.Reason, Details: details}

	// Persist the directives a release changes, then the new one; only then
	// does memory change.
	for i, c := range append(changed, d) {
		if err := p.store.SaveDirective(ctx, *c); err != nil {
			if i > 0 {
				p.resync(ctx)
			}
			return Directive{}, fmt.Errorf("controlplane: save directive %s: %w", c.ID, err)
		}
	}
	for _, c := range changed {
		p.put(c, nil)
	}
	p.put(d, pr.compiled)
	p.publish()
	return d.Clone(), p.record(ctx, events)
}

// releaseFrom returns changed copies of the active directives a release or
// relax d takes its agents out of: quarantines for a release, tightens for a
// relax. A copy left binding nobody is expired.
func (p *Plane) releaseFrom(d *Directive) []*Directive {
	victim := Quarantine
	if d.Type == Relax {
		victim = Tighten
	}
	var out []*Directive
	for _, a := range p.active {
		if a.Type != victim {
			continue
		}
		bound := a.Bound()
		var take []string
		for _, id := range d.ResolvedAgents {
			if _, ok := slices.BinarySearch(bound, id); ok {
				take = append(take, id)
			}
		}
		if len(take) == 0 {
			continue
		}
		c := a.Clone()
		c.Released = append(c.Released, take...)
		slices.Sort(c.Released)
		c.Released = slices.Compact(c.Released)
		if len(c.Bound()) == 0 {
			c.Status, c.ExpiredAt = StatusExpired, d.IssuedAt
		}
		out = append(out, &c)
	}
	return out
}
