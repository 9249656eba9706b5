package governor

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func mustInvariant(t *testing.T, name, expr, msg string) *Invariant {
	t.Helper()
	inv, err := CompileInvariant(name, expr, msg)
	if err != nil {
		t.Fatalf("CompileInvariant(%s): %v", name, err)
	}
	return inv
}

func TestOverlayInvariants(t *testing.T) {
	noProd := mustInvariant(t, "no_prod", `!action.target.startsWith("prod/")`, "stay out of production")
	small := mustInvariant(t, "small", `action.parameters.rows < 100.0`, "")
	cases := []struct {
		name       string
		invs       []*Invariant
		act        Action
		wantVetoes []string
		failedHas  []string
	}{
		{"holding invariant", []*Invariant{noProd}, Action{Type: "read", Target: "dev/db"}, nil, nil},
		{"failed invariant vetoes", []*Invariant{noProd}, Action{Type: "read", Target: "prod/db"}, []string{"invariant:no_prod"}, []string{"no_prod: stay out of production"}},
		{"evaluation error fails closed", []*Invariant{small}, Action{Type: "read", Target: "dev/db"}, []string{"invariant:small"}, []string{"small:", "evaluation error"}},
		{"every failed invariant is listed", []*Invariant{noProd, small}, Action{Type: "read", Target: "prod/db", Parameters: map[string]any{"rows": 500.0}},
			[]string{"invariant:no_prod", "invariant:small"}, []string{"no_prod", "small"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a", Scope: []string{"*"}})
			e.SetOverlays(Overlays{"a": {Invariants: tc.invs}})
			d := dryAct(t, e, "a", tc.act)
			if len(tc.wantVetoes) == 0 {
				if len(d.Vetoes) != 0 || d.Verdict != Allow {
					t.Errorf("got %s with vetoes %v, want ALLOW without vetoes", d.Verdict, d.Vetoes)
				}
				return
			}
			if !slices.Equal(d.Vetoes, tc.wantVetoes) {
				t.Errorf("got vetoes %v, want %v", d.Vetoes, tc.wantVetoes)
			}
			if d.Verdict != Deny || d.Tier != 1 {
				t.Errorf("got %s at tier %d, want DENY at tier 1", d.Verdict, d.Tier)
			}
			s, _ := findStep(d, StepDimensionEval)
			failed := strings.Join(s.Output.(*DimensionOutput).FailedInvariants, "; ")
			for _, w := range tc.failedHas {
				if !strings.Contains(failed, w) || !strings.Contains(d.Reasoning, w) {
					t.Errorf("got failed invariants %q and reasoning %q, want both to contain %q", failed, d.Reasoning, w)
				}
			}
			var gaps []string
			for _, g := range d.ToPass.DimensionGaps {
				gaps = append(gaps, g.Dimension)
			}
			for _, v := range tc.wantVetoes {
				if !slices.Contains(gaps, v) {
					t.Errorf("got dimension gaps %v, want %s among them", gaps, v)
				}
			}
		})
	}
}

func TestSetOverlaysTakesEffectOnNextEvaluate(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"*"}})
	mustContract(t, e, Contract{AgentID: "b", Scope: []string{"*"}})
	noRead := mustInvariant(t, "no_read", `action.type != "read"`, "")
	steps := []struct {
		name        string
		overlays    Overlays
		set         bool
		agent       string
		want        Verdict
		wantStep    string // deciding step
		wantAdvice  string
		wantDirects []string
	}{
		{"no overlays", nil, false, "a", Allow, StepTier2, "", []string{}},
		{"quarantine a", Overlays{"a": {Quarantined: true, Directives: []string{"dir_q"}}}, true, "a", Escalate, StepQuarantine, "", []string{"dir_q"}},
		{"b is not quarantined", nil, false, "b", Allow, StepTier2, "", []string{}},
		{"swap to an invariant", Overlays{"a": {Invariants: []*Invariant{noRead}, Advisory: "reads are paused", Directives: []string{"dir_e"}}}, true, "a", Deny, StepTier1, "reads are paused", []string{"dir_e"}},
		{"suspend a", Overlays{"a": {Suspended: true}}, true, "a", Suspend, StepSuspension, "", []string{}},
		{"clear", nil, true, "a", Allow, StepTier2, "", []string{}},
	}
	for _, s := range steps {
		if s.set {
			e.SetOverlays(s.overlays)
		}
		d := evalAct(t, e, s.agent, readAct())
		clk.Advance(time.Second)
		last := d.Pipeline[len(d.Pipeline)-1].Name
		if d.Verdict != s.want || last != s.wantStep {
			t.Errorf("%s: got %s by %s, want %s by %s", s.name, d.Verdict, last, s.want, s.wantStep)
		}
		if d.Advisory != s.wantAdvice || !slices.Equal(d.Directives, s.wantDirects) {
			t.Errorf("%s: got advisory %q directives %v, want %q %v", s.name, d.Advisory, d.Directives, s.wantAdvice, s.wantDirects)
		}
	}
	if e.Overlay("a") != nil {
		t.Errorf("got overlay %+v after clearing, want nil", e.Overlay("a"))
	}
}

func TestOverlayRateFactor(t *testing.T) {
	cases := []struct {
		name   string
		factor float64
		want   float64
		veto   bool
	}{
		{"no throttle: 2 of 4", 0, 0.75, false},
		{"throttled by half: 2 of 2", 0.5, 0, true},
		{"throttled to a tenth: the limit is at least 1", 0.1, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Limits: Limits{ActionsPerMinute: 4}})
			allowN(t, e, clk, "a", 2)
			e.SetOverlays(Overlays{"a": {RateFactor: tc.factor}})
			wantScore(t, dryAct(t, e, "a", readAct()), DimResourceBoundaries, tc.want, tc.veto)
		})
	}
}
