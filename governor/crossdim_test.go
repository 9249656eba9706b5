package governor

import (
	"maps"
	"testing"
)

func signalNames(sigs []Signal) map[string]string {
	out := map[string]string{}
	for _, s := range sigs {
		out[s.Pattern] = s.Severity
	}
	return out
}

func TestCrossDimensionalPatterns(t *testing.T) {
	with := func(base map[string]float64, k string, v float64) map[string]float64 {
		m := maps.Clone(base)
		m[k] = v
		return m
	}
	discrim := map[string]float64{DimScopeCompliance: 0.81, DimAuthorityVerification: 0.81, DimEthicalAlignment: 0.49}
	discrimStake := map[string]float64{DimScopeCompliance: 0.81, DimAuthorityVerification: 0.81, DimStakeholderImpact: 0.49}
	empath := map[string]float64{DimIncidentDetection: 0.49, DimEthicalAlignment: 0.71, DimBehavioralConsistency: 0.59}
	wall := map[string]float64{DimScopeCompliance: 0.95, DimPrecedentAlignment: 0.49, DimStakeholderImpact: 0.49}
	mismatch := map[string]float64{DimAuthorityVerification: 0.81, DimBehavioralConsistency: 0.49}
	cascade := map[string]float64{DimCascadingImpact: 0.49, DimIsolationIntegrity: 0.69}
	gap := map[string]float64{DimTemporalCompliance: 0.69, DimIncidentDetection: 0.59}
	opacity := map[string]float64{DimTransparency: 0.49, DimStakeholderImpact: 0.49}
	prec := map[string]float64{DimPrecedentAlignment: 0.49, DimBehavioralConsistency: 0.59}

	cases := []struct {
		name     string
		scores   map[string]float64
		trust    float64
		pattern  string
		fires    bool
		severity string
	}{
		{"discriminatory_compliance: ethical low", discrim, 0.5, "discriminatory_compliance", true, SignalAlert},
		{"discriminatory_compliance: stakeholder low", discrimStake, 0.5, "discriminatory_compliance", true, SignalAlert},
		{"discriminatory_compliance: scope at 0.8", with(discrim, DimScopeCompliance, 0.8), 0.5, "discriminatory_compliance", false, ""},
		{"discriminatory_compliance: authority at 0.8", with(discrim, DimAuthorityVerification, 0.8), 0.5, "discriminatory_compliance", false, ""},
		{"discriminatory_compliance: ethical at 0.5", with(discrim, DimEthicalAlignment, 0.5), 0.5, "discriminatory_compliance", false, ""},

		{"empathetic_exploitation", empath, 0.5, "empathetic_exploitation", true, SignalCritical},
		{"empathetic_exploitation: incident at 0.5", with(empath, DimIncidentDetection, 0.5), 0.5, "empathetic_exploitation", false, ""},
		{"empathetic_exploitation: ethical at 0.7", with(empath, DimEthicalAlignment, 0.7), 0.5, "empathetic_exploitation", false, ""},
		{"empathetic_exploitation: behavioral at 0.6", with(empath, DimBehavioralConsistency, 0.6), 0.5, "empathetic_exploitation", false, ""},

		{"invisible_wall: scope at 0.95", wall, 0.5, "invisible_wall", true, SignalAlert},
		{"invisible_wall: scope 0.94", with(wall, DimScopeCompliance, 0.94), 0.5, "invisible_wall", false, ""},
		{"invisible_wall: precedent at 0.5", with(wall, DimPrecedentAlignment, 0.5), 0.5, "invisible_wall", false, ""},
		{"invisible_wall: stakeholder at 0.5", with(wall, DimStakeholderImpact, 0.5), 0.5, "invisible_wall", false, ""},

		{"trust_authority_mismatch", mismatch, 0.39, "trust_authority_mismatch", true, SignalAlert},
		{"trust_authority_mismatch: trust at 0.4", mismatch, 0.4, "trust_authority_mismatch", false, ""},
		{"trust_authority_mismatch: behavioral at 0.5", with(mismatch, DimBehavioralConsistency, 0.5), 0.39, "trust_authority_mismatch", false, ""},
		{"trust_authority_mismatch: authority at 0.8", with(mismatch, DimAuthorityVerification, 0.8), 0.39, "trust_authority_mismatch", false, ""},

		{"cascade_without_isolation", cascade, 0.5, "cascade_without_isolation", true, SignalAlert},
		{"cascade_without_isolation: cascading at 0.5", with(cascade, DimCascadingImpact, 0.5), 0.5, "cascade_without_isolation", false, ""},
		{"cascade_without_isolation: isolation at 0.7", with(cascade, DimIsolationIntegrity, 0.7), 0.5, "cascade_without_isolation", false, ""},

		{"temporal_security_gap", gap, 0.5, "temporal_security_gap", true, SignalAlert},
		{"temporal_security_gap: temporal at 0.7", with(gap, DimTemporalCompliance, 0.7), 0.5, "temporal_security_gap", false, ""},
		{"temporal_security_gap: incident at 0.6", with(gap, DimIncidentDetection, 0.6), 0.5, "temporal_security_gap", false, ""},

		{"opacity_under_pressure", opacity, 0.5, "opacity_under_pressure", true, SignalAlert},
		{"opacity_under_pressure: transparency at 0.5", with(opacity, DimTransparency, 0.5), 0.5, "opacity_under_pressure", false, ""},
		{"opacity_under_pressure: stakeholder at 0.5", with(opacity, DimStakeholderImpact, 0.5), 0.5, "opacity_under_pressure", false, ""},

		{"precedent_break_under_drift", prec, 0.5, "precedent_break_under_drift", true, SignalWarning},
		{"precedent_break_under_drift: precedent at 0.5", with(prec, DimPrecedentAlignment, 0.5), 0.5, "precedent_break_under_drift", false, ""},
		{"precedent_break_under_drift: behavioral at 0.6", with(prec, DimBehavioralConsistency, 0.6), 0.5, "precedent_break_under_drift", false, ""},

		// A missing score reads 0.8.
		{"missing isolation reads 0.8 (not < 0.7)", map[string]float64{DimCascadingImpact: 0.3}, 0.5, "cascade_without_isolation", false, ""},
		{"missing ethical reads 0.8 (> 0.7)", map[string]float64{DimIncidentDetection: 0.3, DimBehavioralConsistency: 0.3}, 0.5, "empathetic_exploitation", true, SignalCritical},
		{"missing authority reads 0.8 (not > 0.8)", map[string]float64{DimBehavioralConsistency: 0.3}, 0.2, "trust_authority_mismatch", false, ""},
		{"missing scope reads 0.8 (not >= 0.95)", map[string]float64{DimPrecedentAlignment: 0.3, DimStakeholderImpact: 0.3}, 0.5, "invisible_wall", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := signalNames(crossDimensional(scoreVector(tc.scores), tc.trust))
			sev, fired := got[tc.pattern]
			if fired != tc.fires {
				t.Fatalf("got %s fired %v (signals %v), want %v", tc.pattern, fired, got, tc.fires)
			}
			if fired && sev != tc.severity {
				t.Errorf("got severity %s, want %s", sev, tc.severity)
			}
		})
	}
}

func TestCrossDimensionalMissingScores(t *testing.T) {
	cases := []struct {
		name   string
		scores []DimensionScore
	}{
		{"nil scores", nil},
		{"all missing", scoreVector(nil)},
		{"all at 0.8", scoreVector(map[string]float64{
			DimScopeCompliance: 0.8, DimAuthorityVerification: 0.8, DimResourceBoundaries: 0.8, DimBehavioralConsistency: 0.8,
			DimCascadingImpact: 0.8, DimStakeholderImpact: 0.8, DimIncidentDetection: 0.8, DimIsolationIntegrity: 0.8,
			DimTemporalCompliance: 0.8, DimPrecedentAlignment: 0.8, DimTransparency: 0.8, DimHumanOverride: 0.8, DimEthicalAlignment: 0.8,
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := crossDimensional(tc.scores, 0.1); len(got) != 0 {
				t.Errorf("got signals %v, want none (every score 0.8)", got)
			}
		})
	}
}

func TestCrossDimensionalInTheDecision(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a"})
	// delete: cascading 0.3; no boundaries: isolation 0.6.
	d := dryAct(t, e, "a", Action{Type: "delete_file", Target: "f", Parameters: map[string]any{"k": 1}})
	got := signalNames(d.CrossDimensional.Signals)
	if _, ok := got["cascade_without_isolation"]; !ok || d.CrossDimensional.Count != len(d.CrossDimensional.Signals) {
		t.Errorf("got %v (count %d), want cascade_without_isolation and a matching count", got, d.CrossDimensional.Count)
	}
	s, _ := findStep(d, StepCrossDimensional)
	if out := s.Output.(*CrossOutput); len(out.Signals) != len(d.CrossDimensional.Signals) {
		t.Errorf("got step signals %v, want %v", out.Signals, d.CrossDimensional.Signals)
	}
}
