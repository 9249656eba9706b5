package governor

import "slices"

// actionToPass says what would have to change for another verdict
// (Decision.ToPass).
func (ev *evaluation) actionToPass() {
	cfg, d := ev.cfg, ev.d
	tp := &d.ToPass
	switch d.Verdict {
	case Deny:
		needed := cfg.AllowThreshold
		tp.UCSNeeded = ptr(needed)
		tp.Gap = ptr(max(needed-d.UCS, 0))
		for _, s := range d.Scores {
			switch {
			case s.Veto:
				tp.DimensionGaps = append(tp.DimensionGaps, DimensionGap{Dimension: s.Dimension, Score: s.Score, Needed: vetoFreeScore(s.Dimension)})
			case len(ev.vetoes) == 0 && s.Score < needed:
				tp.DimensionGaps = append(tp.DimensionGaps, DimensionGap{Dimension: s.Dimension, Score: s.Score, Needed: needed})
			}
		}
		for _, v := range ev.vetoes {
			if len(v) > 10 && v[:10] == "invariant:" {
				tp.DimensionGaps = append(tp.DimensionGaps, DimensionGap{Dimension: v, Score: 0, Needed: 1})
			}
		}
		if tp.DimensionGaps == nil {
			tp.DimensionGaps = []DimensionGap{}
		}
	case Allow:
		tp.MarginToDeny = ptr(max(d.UCS-cfg.DenyThreshold, 0))
		var closest *DimensionPoint
		for _, s := range d.Scores {
			if i := slices.IndexFunc(dimensionOrder[:], func(x dimensionSpec) bool { return x.name == s.Dimension }); i >= 0 && dimensionOrder[i].canVeto {
				if closest == nil || s.Score < closest.Score {
					closest = &DimensionPoint{Dimension: s.Dimension, Score: s.Score}
				}
			}
		}
		tp.ClosestVeto = closest
	case Escalate:
		tp.Requires = "human approval of this exact action"
		tp.UCSNeeded = ptr(cfg.AllowThreshold)
		tp.Gap = ptr(max(cfg.AllowThreshold-d.UCS, 0))
	case Modify:
		tp.Requires = "the modifications " + joinComma(d.Modifications) + ", or human approval"
		tp.UCSNeeded = ptr(cfg.AllowThreshold)
		tp.Gap = ptr(max(cfg.AllowThreshold-d.UCS, 0))
	}
}

// vetoFreeScore is the lowest score at which a dimension stops vetoing.
func vetoFreeScore(dim string) float64 {
	if dim == DimIncidentDetection {
		return 0.2
	}
	return 1
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

func ptr[T any](v T) *T { return &v }
