package controlplane

import (
	"slices"

	"github.com/vigilhq/vigil/governor"
)

// buildOverlays computes every agent's overlay from the active directives,
// given oldest first, and the compiled invariants of the enforce directives
// by directive id. The result is new and never modified afterwards.
func buildOverlays(active []*Directive, compiled map[string][]*governor.Invariant) governor.Overlays {
	out := governor.Overlays{}
	for _, d := range active {
		for _, agent := range d.Bound() {
			ov := out[agent]
			if ov == nil {
				ov = &governor.Overlay{}
				out[agent] = ov
			}
			ov.Directives = append(ov.Directives, d.ID)
			switch d.Type {
			case Quarantine:
				ov.Quarantined = true
			case Tighten:
				if ov.ThresholdFactor == 0 {
					ov.ThresholdFactor = 1
				}
				ov.ThresholdFactor *= d.Parameters.Factor
			case Throttle:
				if ov.RateFactor == 0 {
					ov.RateFactor = 1
				}
				ov.RateFactor *= d.Parameters.Factor
			case Enforce:
				ov.Invariants = append(ov.Invariants, compiled[d.ID]...)
			case ReAnchor:
				if ov.ReAnchors == nil {
					ov.ReAnchors = map[string]string{}
				}
				ov.ReAnchors[d.Parameters.Term] = d.ID // newest wins
			case BroadcastReminder:
				ov.Advisory = d.Parameters.Message // newest wins
			}
		}
	}
	for _, ov := range out {
		slices.Sort(ov.Directives)
	}
	return out
}

// compileInvariants compiles an enforce directive's invariants. One that no
// longer compiles (a stored directive read by a newer CEL) is replaced by an
// invariant that always fails: the directive keeps vetoing, fail closed.
func compileInvariants(d *Directive) []*governor.Invariant {
	out := make([]*governor.Invariant, 0, len(d.Parameters.Invariants))
	for _, inv := range d.Parameters.Invariants {
		c, err := governor.CompileInvariant(inv.Name, inv.Expr, inv.Message)
		if err != nil {
			msg := "enforce directive " + d.ID + ": invariant no longer compiles: " + err.Error()
			c, _ = governor.CompileInvariant(inv.Name, "false", msg)
		}
		out = append(out, c)
	}
	return out
}
