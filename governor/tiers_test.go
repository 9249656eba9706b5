package governor

import (
	"slices"
	"testing"
	"time"
)

// deliberatorFunc adapts a function to Deliberator.
type deliberatorFunc func(DeliberateArgs) (Verdict, string, bool)

func (f deliberatorFunc) Deliberate(a DeliberateArgs) (Verdict, string, bool) { return f(a) }

// deciderRule returns the rule recorded by the deciding step, if any.
func deciderRule(d *Decision) string {
	if vs, ok := d.Pipeline[len(d.Pipeline)-1].Output.(*VerdictState); ok {
		return vs.Rule
	}
	return ""
}

func TestTier1Vetoes(t *testing.T) {
	noDelete, err := CompileInvariant("no_delete", `action.type != "export_report"`, "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		contract   Contract
		overlay    *Overlay
		act        Action
		want       Verdict
		wantVetoes []string
	}{
		{"only human_override vetoes: escalate", Contract{HumanOverride: []string{"export_report"}},
			nil, Action{Type: "export_report", Target: "r", Parameters: map[string]any{"k": 1}}, Escalate, []string{DimHumanOverride}},
		{"human_override and scope veto: deny", Contract{Scope: []string{"read"}, HumanOverride: []string{"export_report"}},
			nil, Action{Type: "export_report", Target: "r", Parameters: map[string]any{"k": 1}}, Deny, []string{DimScopeCompliance, DimHumanOverride}},
		{"human_override and an invariant veto: deny", Contract{HumanOverride: []string{"export_report"}},
			&Overlay{Invariants: []*Invariant{noDelete}}, Action{Type: "export_report", Target: "r", Parameters: map[string]any{"k": 1}}, Deny, []string{DimHumanOverride, "invariant:no_delete"}},
		{"scope veto alone: deny", Contract{Scope: []string{"read"}},
			nil, Action{Type: "write", Target: "r", Parameters: map[string]any{"k": 1}}, Deny, []string{DimScopeCompliance}},
		{"isolation veto alone: deny", Contract{Boundaries: []string{"internal/*"}},
			nil, Action{Type: "read", Target: "external/x"}, Deny, []string{DimIsolationIntegrity}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.contract
			c.AgentID = "a"
			e, _ := engineWith(t, c)
			if tc.overlay != nil {
				e.SetOverlays(Overlays{"a": tc.overlay})
			}
			d := dryAct(t, e, "a", tc.act)
			if d.Verdict != tc.want || d.Tier != 1 {
				t.Errorf("got %s at tier %d, want %s at tier 1 (%s)", d.Verdict, d.Tier, tc.want, d.Reasoning)
			}
			if !slices.Equal(d.Vetoes, tc.wantVetoes) {
				t.Errorf("got vetoes %v, want %v", d.Vetoes, tc.wantVetoes)
			}
			if d.UCS != 0 {
				t.Errorf("got UCS %v, want 0", d.UCS)
			}
			if last := d.Pipeline[len(d.Pipeline)-1].Name; last != StepTier1 {
				t.Errorf("got deciding step %s, want %s", last, StepTier1)
			}
		})
	}
}

func TestTier2InclusiveThresholds(t *testing.T) {
	// The UCS of a fresh agent's read, with no critical signal: 13.85/16.7.
	e0, _ := engineWith(t, Contract{AgentID: "a"})
	u := dryAct(t, e0, "a", readAct()).UCS
	if !approx(u, 13.85/16.7) {
		t.Fatalf("setup: got UCS %v, want %v", u, 13.85/16.7)
	}
	cases := []struct {
		name        string
		allow, deny float64
		want        Verdict
		wantTier    int
	}{
		{"default thresholds allow", 0.7, 0.3, Allow, 2},
		{"UCS equal to the allow threshold allows", u, 0.3, Allow, 2},
		{"UCS just below the allow threshold goes to tier 3", u + 1e-9, 0.3, Allow, 3},
		{"UCS equal to the deny threshold denies", 0.95, u, Deny, 2},
		{"UCS just above the deny threshold goes to tier 3", 0.95, u - 1e-9, Allow, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AllowThreshold, cfg.DenyThreshold = tc.allow, tc.deny
			e, _ := newTestEngineCfg(t, cfg)
			mustContract(t, e, Contract{AgentID: "a"})
			d := dryAct(t, e, "a", readAct())
			if d.Verdict != tc.want || d.Tier != tc.wantTier {
				t.Errorf("got %s at tier %d, want %s at tier %d (UCS %v; %s)", d.Verdict, d.Tier, tc.want, tc.wantTier, d.UCS, d.Reasoning)
			}
			if d.Reversibility.ForcedTier3 {
				t.Errorf("got forced_tier3 true for a read, want false")
			}
		})
	}
}

func TestTier3(t *testing.T) {
	del := Action{Type: "delete_file", Target: "files/x", Parameters: map[string]any{"path": "/x"}}
	cases := []struct {
		name       string
		allow      float64 // allow threshold (0: default)
		trust      float64
		act        Action
		want       Verdict
		wantRule   string
		wantForced bool
		wantMods   []string
	}{
		{"irreversible, trusted: allow", 0, 0.8, del, Allow, "trusted", true, nil},
		{"irreversible, low trust: escalate", 0, 0.35, del, Escalate, "low_trust", true, nil},
		{"irreversible, middling trust: escalate", 0, 0.5, del, Escalate, "irreversible", true, nil},
		{"irreversible, trust exactly 0.7: escalate", 0, 0.7, del, Escalate, "irreversible", true, nil},
		{"irreversible, trust exactly 0.4: escalate as irreversible", 0, 0.4, del, Escalate, "irreversible", true, nil},
		{"weak heavy dimension: modify", 0.95, 0.5,
			Action{Type: "delete_cache", Target: "cache/x", Parameters: map[string]any{"k": 1}, Reversibility: Compensable},
			Modify, "weak_dimension", false, []string{"reduce_scope", "require_confirmation"}},
		{"no tier 3 concern: default allow", 0.95, 0.5, readAct(), Allow, "default", false, nil},
		{"low trust beats a weak dimension", 0.95, 0.35,
			Action{Type: "delete_cache", Target: "cache/x", Parameters: map[string]any{"k": 1}, Reversibility: Compensable},
			Escalate, "low_trust", false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.allow != 0 {
				cfg.AllowThreshold = tc.allow
			}
			e, _ := newTestEngineCfg(t, cfg)
			mustContract(t, e, Contract{AgentID: "a"})
			withState(t, e, "a", func(st *agentState) { st.Trust = tc.trust })
			d := dryAct(t, e, "a", tc.act)
			if d.Verdict != tc.want || d.Tier != 3 {
				t.Fatalf("got %s at tier %d, want %s at tier 3 (UCS %v; %s)", d.Verdict, d.Tier, tc.want, d.UCS, d.Reasoning)
			}
			if got := deciderRule(d); got != tc.wantRule {
				t.Errorf("got rule %q, want %q", got, tc.wantRule)
			}
			if d.Reversibility.ForcedTier3 != tc.wantForced {
				t.Errorf("got forced_tier3 %v, want %v", d.Reversibility.ForcedTier3, tc.wantForced)
			}
			if _, ok := findStep(d, StepTier2); ok == tc.wantForced {
				t.Errorf("got tier2 step present %v, want %v (steps %v)", ok, !tc.wantForced, stepNames(d))
			}
			if s, ok := findStep(d, StepReversibilityEscalation); !ok || s.Output.(*EscalationOutput).ForcedTier3 != tc.wantForced {
				t.Errorf("got reversibility_escalation output %+v, want forced_tier3 %v", s.Output, tc.wantForced)
			}
			if !slices.Equal(d.Modifications, tc.wantMods) {
				t.Errorf("got modifications %v, want %v", d.Modifications, tc.wantMods)
			}
		})
	}
}

func TestIrreversibleSkipsTier2EvenAboveAllowThreshold(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a"})
	d := dryAct(t, e, "a", Action{Type: "send_email", Target: "mail/x", Parameters: map[string]any{"to": "x"}})
	if d.UCS < 0.7 {
		t.Fatalf("setup: got UCS %v, want at least 0.7", d.UCS)
	}
	if !d.Reversibility.ForcedTier3 || d.Reversibility.Level != Irreversible {
		t.Errorf("got %+v, want irreversible and forced to tier 3", d.Reversibility)
	}
	if d.Verdict != Escalate || d.Tier != 3 {
		t.Errorf("got %s at tier %d, want ESCALATE at tier 3", d.Verdict, d.Tier)
	}
}

func TestTier3Deliberators(t *testing.T) {
	pass := deliberatorFunc(func(DeliberateArgs) (Verdict, string, bool) { return 0, "", false })
	deny := deliberatorFunc(func(DeliberateArgs) (Verdict, string, bool) { return Deny, "policy says no", true })
	invalid := deliberatorFunc(func(DeliberateArgs) (Verdict, string, bool) { return Verdict(42), "bogus", true })
	cases := []struct {
		name     string
		ds       []Deliberator
		want     Verdict
		wantRule string
	}{
		{"a deciding deliberator comes first", []Deliberator{deny}, Deny, "deliberator 0"},
		{"an undecided deliberator passes on", []Deliberator{pass, deny}, Deny, "deliberator 1"},
		{"all undecided: built-in rules", []Deliberator{pass}, Allow, "default"},
		{"an invalid verdict is ignored", []Deliberator{invalid}, Allow, "default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AllowThreshold = 0.95
			e, _ := newTestEngineCfg(t, cfg, WithDeliberators(tc.ds...))
			mustContract(t, e, Contract{AgentID: "a"})
			d := dryAct(t, e, "a", readAct())
			if d.Verdict != tc.want || d.Tier != 3 {
				t.Errorf("got %s at tier %d, want %s at tier 3", d.Verdict, d.Tier, tc.want)
			}
			if got := deciderRule(d); got != tc.wantRule {
				t.Errorf("got rule %q, want %q", got, tc.wantRule)
			}
		})
	}
	t.Run("the deliberator sees the evaluation", func(t *testing.T) {
		var got DeliberateArgs
		spy := deliberatorFunc(func(a DeliberateArgs) (Verdict, string, bool) { got = a; return 0, "", false })
		e, _ := newTestEngine(t, WithDeliberators(spy))
		mustContract(t, e, Contract{AgentID: "a"})
		d := dryAct(t, e, "a", Action{Type: "delete_file", Target: "f", Parameters: map[string]any{"k": 1}})
		if got.AgentID != "a" || got.Action == nil || got.Action.Type != "delete_file" || got.Reversibility != Irreversible ||
			!approx(got.UCS, d.UCS) || got.Trust != 0.5 || len(got.Scores) != 13 {
			t.Errorf("got args %+v, want agent a, the action, irreversible, UCS %v, trust 0.5, 13 scores", got, d.UCS)
		}
	})
	t.Run("a deliberator overrides even a trusted irreversible allow", func(t *testing.T) {
		e, _ := newTestEngine(t, WithDeliberators(deliberatorFunc(func(DeliberateArgs) (Verdict, string, bool) { return Escalate, "always ask", true })))
		mustContract(t, e, Contract{AgentID: "a"})
		withState(t, e, "a", func(st *agentState) { st.Trust = 0.9 })
		d := dryAct(t, e, "a", Action{Type: "delete_file", Target: "f", Parameters: map[string]any{"k": 1}})
		if d.Verdict != Escalate || deciderRule(d) != "deliberator 0" {
			t.Errorf("got %s by %q, want ESCALATE by deliberator 0", d.Verdict, deciderRule(d))
		}
	})
}

func TestVerdictTrustEffects(t *testing.T) {
	cases := []struct {
		name      string
		cfgAllow  float64
		contract  Contract
		trust     float64
		act       Action
		want      Verdict
		wantTrust float64
	}{
		{"ALLOW +0.01", 0, Contract{}, 0.5, readAct(), Allow, 0.51},
		{"DENY -0.05", 0, Contract{Scope: []string{"read"}}, 0.5, writeAct(), Deny, 0.45},
		{"ESCALATE unchanged", 0, Contract{HumanOverride: []string{"write"}}, 0.5, writeAct(), Escalate, 0.5},
		{"MODIFY unchanged", 0.95, Contract{}, 0.5,
			Action{Type: "delete_cache", Target: "c", Parameters: map[string]any{"k": 1}, Reversibility: Compensable}, Modify, 0.5},
		{"DENY floors at 0.05", 0, Contract{Scope: []string{"read"}}, 0.07, writeAct(), Deny, 0.05},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfgAllow != 0 {
				cfg.AllowThreshold = tc.cfgAllow
			}
			e, _ := newTestEngineCfg(t, cfg)
			c := tc.contract
			c.AgentID = "a"
			mustContract(t, e, c)
			withState(t, e, "a", func(st *agentState) { st.Trust = tc.trust })
			d := evalAct(t, e, "a", tc.act)
			if d.Verdict != tc.want {
				t.Fatalf("got %s, want %s (%s)", d.Verdict, tc.want, d.Reasoning)
			}
			if got := mustStatus(t, e, "a").Trust; !approx(got, tc.wantTrust) {
				t.Errorf("got trust %v, want %v", got, tc.wantTrust)
			}
		})
	}
}

// TestApprovalSettlesTier3: an irreversible action escalates at tier 3; once
// a human approves that exact action, its retry is allowed once, and the
// next identical call escalates again.
func TestApprovalSettlesTier3(t *testing.T) {
	e, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetContract(Contract{AgentID: "a", Scope: []string{"refund"}}); err != nil {
		t.Fatal(err)
	}
	refund := Action{Type: "refund", Target: "payments/orders/42", Parameters: map[string]any{"amount": 80.0}}
	steps := []struct {
		name    string
		approve bool
		want    Verdict
	}{
		{"held for a human", false, Escalate},
		{"approved retry passes", true, Allow},
		{"the approval is used up", false, Escalate},
	}
	for _, st := range steps {
		if st.approve {
			if err := e.GrantApproval("a", ActionDigest("a", &refund), time.Now().Add(10*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		d, err := e.Evaluate(Request{AgentID: "a", Action: refund})
		if err != nil {
			t.Fatal(err)
		}
		if d.Verdict != st.want {
			t.Errorf("%s: got %v (%s), want %v", st.name, d.Verdict, d.Reasoning, st.want)
		}
	}
	// An approval does not lift another veto.
	if err := e.GrantApproval("a", ActionDigest("a", &Action{Type: "delete", Target: "x"}), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Evaluate(Request{AgentID: "a", Action: Action{Type: "delete", Target: "x"}}); d.Verdict != Deny {
		t.Errorf("approved but out of scope: got %v, want DENY", d.Verdict)
	}
}
