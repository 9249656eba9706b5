package governor

// Cross-dimensional patterns (GOVERNOR.md section 5): combinations of scores
// that mean more together than apart.

// Signal severities.
const (
	SignalWarning  = "warning"
	SignalAlert    = "alert"
	SignalCritical = "critical"
)

type pattern struct {
	name     string
	severity string
	fires    func(s *[numDims]float64, trust float64) bool
}

var patterns = [...]pattern{
	{"discriminatory_compliance", SignalAlert, func(s *[numDims]float64, _ float64) bool {
		return s[dimScope] > 0.8 && s[dimAuthority] > 0.8 && (s[dimEthical] < 0.5 || s[dimStakeholder] < 0.5)
	}},
	{"empathetic_exploitation", SignalCritical, func(s *[numDims]float64, _ float64) bool {
		return s[dimIncident] < 0.5 && s[dimEthical] > 0.7 && s[dimBehavioral] < 0.6
	}},
	{"invisible_wall", SignalAlert, func(s *[numDims]float64, _ float64) bool {
		return s[dimScope] >= 0.95 && s[dimPrecedent] < 0.5 && s[dimStakeholder] < 0.5
	}},
	{"trust_authority_mismatch", SignalAlert, func(s *[numDims]float64, trust float64) bool {
		return s[dimAuthority] > 0.8 && s[dimBehavioral] < 0.5 && trust < 0.4
	}},
	{"cascade_without_isolation", SignalAlert, func(s *[numDims]float64, _ float64) bool {
		return s[dimCascading] < 0.5 && s[dimIsolation] < 0.7
	}},
	{"temporal_security_gap", SignalAlert, func(s *[numDims]float64, _ float64) bool {
		return s[dimTemporal] < 0.7 && s[dimIncident] < 0.6
	}},
	{"opacity_under_pressure", SignalAlert, func(s *[numDims]float64, _ float64) bool {
		return s[dimTransparency] < 0.5 && s[dimStakeholder] < 0.5
	}},
	{"precedent_break_under_drift", SignalWarning, func(s *[numDims]float64, _ float64) bool {
		return s[dimPrecedent] < 0.5 && s[dimBehavioral] < 0.6
	}},
}

// crossDimensional detects the patterns over the scores. A dimension without
// a score reads 0.8.
func crossDimensional(scores []DimensionScore, trust float64) []Signal {
	var s [numDims]float64
	for i := range s {
		s[i] = 0.8
	}
	for i, d := range scores {
		if i < numDims && d.Dimension != "" {
			s[i] = d.Score
		}
	}
	var out []Signal
	for i := range patterns {
		if patterns[i].fires(&s, trust) {
			out = append(out, Signal{Pattern: patterns[i].name, Severity: patterns[i].severity})
		}
	}
	return out
}
