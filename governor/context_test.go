package governor

import (
	"testing"
	"time"
)

func contextOutput(t *testing.T, d *Decision) *ContextOutput {
	t.Helper()
	s, ok := findStep(d, StepContextualModifier)
	if !ok {
		t.Fatalf("no %s step", StepContextualModifier)
	}
	return s.Output.(*ContextOutput)
}

func TestContextualModifier(t *testing.T) {
	all := func(delta float64) map[string]float64 {
		m := map[string]float64{}
		for _, d := range dimensionOrder {
			m[d.name] = d.weight + delta
		}
		return m
	}
	deny := Action{Type: "delete", Target: "x", Parameters: map[string]any{"k": 1}}
	cases := []struct {
		name        string
		ctx         Context
		history     []Action // evaluated first (scope: read only)
		drift       float64  // overall drift set before the evaluation
		wantWeights map[string]float64
		wantTrustM  float64
	}{
		{"no context", Context{}, nil, 0, nil, 0},
		{"origin user_request", Context{Origin: "user_request"}, nil, 0, nil, 0},
		{"origin agent_initiated", Context{Origin: "agent_initiated"}, nil, 0, map[string]float64{DimHumanOverride: 2.3}, 0},
		{"origin escalation_received", Context{Origin: "escalation_received"}, nil, 0, map[string]float64{DimHumanOverride: 1.9, DimAuthorityVerification: 1.7}, 0},
		{"mode incident_response", Context{Mode: "incident_response"}, nil, 0,
			map[string]float64{DimIncidentDetection: 1.7, DimIsolationIntegrity: 1.6, DimTemporalCompliance: 0.7}, 0},
		{"urgency critical", Context{Urgency: "critical"}, nil, 0, all(0.1), 0},
		{"delegation depth 4", Context{DelegationDepth: 4}, nil, 0, map[string]float64{DimAuthorityVerification: 1.7}, 0},
		{"delegation depth 3", Context{DelegationDepth: 3}, nil, 0, nil, 0},
		{"child agents", Context{ChildAgents: 2}, nil, 0, map[string]float64{DimCascadingImpact: 1.4}, 0},
		{"input adversarial", Context{InputCategory: "adversarial"}, nil, 0, map[string]float64{DimIncidentDetection: 1.8, DimIsolationIntegrity: 1.6}, 0},
		{"input ambiguous", Context{InputCategory: "ambiguous"}, nil, 0, map[string]float64{DimTransparency: 0.7}, 0},
		{"deltas sum per dimension", Context{Mode: "incident_response", InputCategory: "adversarial", Urgency: "critical"}, nil, 0,
			func() map[string]float64 {
				m := all(0.1)
				m[DimIncidentDetection], m[DimIsolationIntegrity], m[DimTemporalCompliance] = 1.5+0.2+0.3+0.1, 1.4+0.2+0.2+0.1, 0.8-0.1+0.1
				return m
			}(), 0},
		{"trust falling", Context{}, []Action{deny, deny}, 0, all(0.1), 0},
		{"trust volatile", Context{}, []Action{readAct(), deny, readAct(), deny}, 0, map[string]float64{DimBehavioralConsistency: 1.2}, 0},
		{"trust rising: nothing", Context{}, []Action{readAct(), readAct()}, 0, nil, 0},
		{"drift severity moderate: nothing", Context{}, nil, 0.3, nil, 0},
		{"drift severity high", Context{}, nil, 0.45, map[string]float64{DimBehavioralConsistency: 1.2}, -0.05},
		{"drift severity critical", Context{}, nil, 0.7, map[string]float64{DimBehavioralConsistency: 1.2}, -0.05},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read"}})
			for _, h := range tc.history {
				evalAct(t, e, "a", h)
				clk.Advance(time.Second)
			}
			withState(t, e, "a", func(st *agentState) { st.Drift.Overall = tc.drift })
			stored := mustStatus(t, e, "a").Trust
			d := evalReq(t, e, Request{AgentID: "a", Action: readAct(), Context: tc.ctx, DryRun: true})
			nAdj := 0
			for i, s := range d.Scores {
				want := dimensionOrder[i].weight
				if w, ok := tc.wantWeights[s.Dimension]; ok {
					want = w
					nAdj++
				}
				if !approx(s.Weight, want) {
					t.Errorf("%s: got weight %v, want %v", s.Dimension, s.Weight, want)
				}
			}
			if nAdj > 0 && len(d.Contextual.WeightAdjustments) == 0 {
				t.Errorf("got no recorded weight adjustments, want some")
			}
			var sum float64
			for _, m := range d.Contextual.TrustModifiers {
				sum += m.Delta
			}
			out := contextOutput(t, d)
			if !approx(sum, tc.wantTrustM) || !approx(out.TrustModifier, tc.wantTrustM) {
				t.Errorf("got trust modifiers %v (step %v), want %v", sum, out.TrustModifier, tc.wantTrustM)
			}
			if !approx(out.EffectiveTrust, stored+tc.wantTrustM) {
				t.Errorf("got effective trust %v, want %v", out.EffectiveTrust, stored+tc.wantTrustM)
			}
		})
	}
}

func TestContextualWeightClamp(t *testing.T) {
	cases := []struct {
		name   string
		dim    string
		weight float64
		ctx    Context
		want   float64
	}{
		{"clamped to 3.0", DimHumanOverride, 2.8, Context{Origin: "agent_initiated", Urgency: "critical"}, 3.0},
		{"just under 3.0", DimHumanOverride, 2.5, Context{Origin: "agent_initiated"}, 2.8},
		{"clamped to 0.1", DimTemporalCompliance, 0.15, Context{Mode: "incident_response"}, 0.1},
		{"just above 0.1", DimTemporalCompliance, 0.25, Context{Mode: "incident_response"}, 0.15},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Weights[tc.dim] = tc.weight
			e, _ := newTestEngineCfg(t, cfg)
			mustContract(t, e, Contract{AgentID: "a"})
			d := evalReq(t, e, Request{AgentID: "a", Action: readAct(), Context: tc.ctx, DryRun: true})
			if got := scoreOf(t, d, tc.dim).Weight; !approx(got, tc.want) {
				t.Errorf("got weight %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContextualTrustModifierClamp(t *testing.T) {
	cases := []struct {
		name     string
		preset   float64 // modifier accumulated before the section 6 rules
		severity string
		resub    bool
		want     float64
	}{
		{"high drift and a resubmission: -0.1", 0, SeverityHigh, true, -0.1},
		{"below -0.1 is clamped", -0.2, SeverityCritical, true, -0.1},
		{"above +0.1 is clamped", 0.3, "", false, 0.1},
		{"within bounds", 0.02, SeverityHigh, false, -0.03},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := &evaluation{req: &Request{}, d: &Decision{}, trust: 0.5, severity: tc.severity, trustDelta: tc.preset}
			if tc.resub {
				ev.resubmittedOf = "act_1"
			}
			ev.contextualModifier()
			if !approx(ev.trustDelta, tc.want) || !approx(ev.effTrust, 0.5+tc.want) {
				t.Errorf("got modifier %v effective %v, want %v and %v", ev.trustDelta, ev.effTrust, tc.want, 0.5+tc.want)
			}
		})
	}
}

func TestContextualTrustModifierDoesNotChangeStoredTrust(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a"})
	withState(t, e, "a", func(st *agentState) { st.Drift.Overall = 0.45 }) // severity high
	d := evalAct(t, e, "a", readAct())
	if out := contextOutput(t, d); !approx(out.EffectiveTrust, 0.45) {
		t.Errorf("got effective trust %v, want 0.45", out.EffectiveTrust)
	}
	if in, _ := ucsOutput(t, d); !approx(in.Trust, 0.45) {
		t.Errorf("got UCS trust %v, want the effective 0.45", in.Trust)
	}
	if d.Verdict != Allow {
		t.Fatalf("got %s, want ALLOW", d.Verdict)
	}
	if got := mustStatus(t, e, "a").Trust; !approx(got, 0.51) {
		t.Errorf("got stored trust %v, want 0.51 (0.5 + ALLOW; the modifier is not stored)", got)
	}
}

func TestResubmission(t *testing.T) {
	denied := Action{Type: "delete", Target: "prod/db", Parameters: map[string]any{"table": "users"}}
	cases := []struct {
		name     string
		first    Action
		second   Action
		wantLink bool
	}{
		{"identical denied action", denied, denied, true},
		{"identical with another action id", denied, func() Action { a := denied; a.ID = "act_other"; return a }(), true},
		{"different parameters", denied, func() Action {
			a := denied
			a.Parameters = map[string]any{"table": "orders"}
			return a
		}(), false},
		{"identical allowed action", readAct(), readAct(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read"}})
			first := evalAct(t, e, "a", tc.first)
			clk.Advance(time.Second)
			trust := mustStatus(t, e, "a").Trust
			d := evalAct(t, e, "a", tc.second)
			var link *CausalLink
			for i := range d.CausalLinks {
				if d.CausalLinks[i].Kind == "resubmission" {
					link = &d.CausalLinks[i]
				}
			}
			if (link != nil) != tc.wantLink {
				t.Fatalf("got resubmission link %+v, want present %v", link, tc.wantLink)
			}
			out := contextOutput(t, d)
			wantMod := 0.0
			if tc.wantLink {
				wantMod = -0.05
				if link.ActionID != first.ActionID || link.Influence != -0.05 {
					t.Errorf("got link %+v, want action %s influence -0.05", link, first.ActionID)
				}
			}
			if !approx(out.TrustModifier, wantMod) || !approx(out.EffectiveTrust, trust+wantMod) {
				t.Errorf("got modifier %v effective %v, want %v and %v", out.TrustModifier, out.EffectiveTrust, wantMod, trust+wantMod)
			}
			if in := d.Pipeline[1].Input.(*ContextInput); in.Resubmission != tc.wantLink {
				t.Errorf("got step input resubmission %v, want %v", in.Resubmission, tc.wantLink)
			}
		})
	}
}
