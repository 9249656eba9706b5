package governor

import (
	"testing"
	"time"
)

// expectedUCS recomputes GOVERNOR.md section 3 from a decision's scores and
// the effective trust: the base, the trust shift, the floor drag and the
// clamped result.
func expectedUCS(scores []DimensionScore, trust float64) (base, shift, drag, ucs float64) {
	var sw, sws float64
	m := 1.0
	for _, s := range scores {
		w := s.Weight * s.Confidence
		sw += w
		sws += s.Score * w
		m = min(m, s.Score)
	}
	base = 0.5
	if sw > 0 {
		base = sws / sw
	}
	shift = (trust - 0.5) * 0.2
	if m < 0.2 {
		drag = (0.2 - m) * 0.3
	}
	ucs = min(max(base+shift-drag, 0), 1)
	return
}

func ucsOutput(t *testing.T, d *Decision) (*UCSInput, *UCSOutput) {
	t.Helper()
	s, ok := findStep(d, StepUCSCompute)
	if !ok {
		t.Fatalf("no %s step in %v", StepUCSCompute, stepNames(d))
	}
	return s.Input.(*UCSInput), s.Output.(*UCSOutput)
}

func TestUCSVetoIsZero(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a", Scope: []string{"read"}})
	d := dryAct(t, e, "a", Action{Type: "write", Target: "x", Parameters: map[string]any{"k": 1}})
	if d.UCS != 0 {
		t.Errorf("got UCS %v, want 0", d.UCS)
	}
	if _, ok := findStep(d, StepUCSCompute); ok {
		t.Errorf("got a %s step after a veto, want none (steps %v)", StepUCSCompute, stepNames(d))
	}
}

func TestUCSCompute(t *testing.T) {
	cases := []struct {
		name      string
		contract  Contract // AgentID "a" is filled in
		rules     []Rule
		setup     func(t *testing.T, e *Engine, clk *fakeClock)
		act       Action
		ctx       Context
		wantBase  float64 // -1: only check against the formula
		wantShift float64
		wantDrag  float64
		wantUCS   float64 // -1: only check against the formula
	}{
		{
			name: "weighted base of a fresh agent's read", act: readAct(),
			// 0.5×1.5 + 0.7×1.5 + 1×1.2 + 0.7×1 + 0.9×1.3 + 0.9×1.2 + 1×1.5 + 0.6×1.4
			// + 1×0.8 + 0.8×0.7 + 1×0.6 + 1×2 + 0.8×2 = 13.85, over 16.7.
			wantBase: 13.85 / 16.7, wantUCS: 13.85 / 16.7,
		},
		{
			name: "trust shift up",
			setup: func(t *testing.T, e *Engine, _ *fakeClock) {
				withState(t, e, "a", func(st *agentState) { st.Trust = 0.9 })
			},
			act: readAct(), wantBase: 13.85 / 16.7, wantShift: 0.08, wantUCS: 13.85/16.7 + 0.08,
		},
		{
			name: "trust shift down",
			setup: func(t *testing.T, e *Engine, _ *fakeClock) {
				withState(t, e, "a", func(st *agentState) { st.Trust = 0.35 })
			},
			act: readAct(), wantBase: 13.85 / 16.7, wantShift: -0.03, wantUCS: 13.85/16.7 - 0.03,
		},
		{
			name: "weights from the context enter the base", act: readAct(), ctx: Context{Urgency: "critical", ChildAgents: 2},
			wantBase: -1, wantUCS: -1,
		},
		{
			name: "floor drag below 0.2",
			setup: func(t *testing.T, e *Engine, clk *fakeClock) {
				for range 10 {
					evalAct(t, e, "a", readAct())
					clk.Advance(10 * time.Second)
				}
				// behavioral: absent type 0.4 × (1 − 0.6 × 0.9) = 0.184.
				withState(t, e, "a", func(st *agentState) { st.Trust, st.Drift.Overall, st.DriftConfidence = 0.5, 0.9, 0.4 })
			},
			act: Action{Type: "archive", Target: "docs/x", Parameters: map[string]any{"k": 1}}, wantBase: -1,
			// effective trust 0.45 (drift severity critical); drag (0.2 − 0.184) × 0.3.
			wantShift: -0.01, wantDrag: (0.2 - 0.184) * 0.3, wantUCS: -1,
		},
		{
			name:     "clamped to 1",
			contract: Contract{Scope: []string{"*"}, Authority: []string{"true"}, Boundaries: []string{"*"}},
			rules:    []Rule{{Name: "always", Expr: "true"}},
			setup: func(t *testing.T, e *Engine, _ *fakeClock) {
				withState(t, e, "a", func(st *agentState) { st.Trust = 0.95 })
			},
			act: readAct(), wantBase: -1, wantShift: 0.09, wantUCS: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.contract
			c.AgentID = "a"
			e, clk := engineWith(t, c)
			if err := e.SetRules(tc.rules); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(t, e, clk)
			}
			d := evalReq(t, e, Request{AgentID: "a", Action: tc.act, Context: tc.ctx, DryRun: true})
			in, out := ucsOutput(t, d)
			base, shift, drag, ucs := expectedUCS(d.Scores, in.Trust)
			if !approx(out.Base, base) || !approx(out.TrustShift, shift) || !approx(out.FloorDrag, drag) || !approx(out.UCS, ucs) {
				t.Errorf("got base %v shift %v drag %v UCS %v, want %v %v %v %v (formula)", out.Base, out.TrustShift, out.FloorDrag, out.UCS, base, shift, drag, ucs)
			}
			if tc.wantBase >= 0 && !approx(out.Base, tc.wantBase) {
				t.Errorf("got base %v, want %v", out.Base, tc.wantBase)
			}
			if !approx(out.TrustShift, tc.wantShift) {
				t.Errorf("got trust shift %v, want %v", out.TrustShift, tc.wantShift)
			}
			if !approx(out.FloorDrag, tc.wantDrag) {
				t.Errorf("got floor drag %v, want %v", out.FloorDrag, tc.wantDrag)
			}
			if tc.wantUCS >= 0 && !approx(out.UCS, tc.wantUCS) {
				t.Errorf("got UCS %v, want %v", out.UCS, tc.wantUCS)
			}
			if !approx(d.UCS, out.UCS) {
				t.Errorf("got decision UCS %v, want the computed %v (no critical signal)", d.UCS, out.UCS)
			}
		})
	}
}

// criticalSetup makes empathetic_exploitation (critical) fire for a fresh
// agent's read: incident 0.3 (drift 0.45, confidence 0.6), behavioral
// 0.7 × 0.73, ethical 0.8.
func criticalSetup(t *testing.T, e *Engine) {
	t.Helper()
	withState(t, e, "a", func(st *agentState) { st.Drift.Overall, st.DriftConfidence = 0.45, 0.6 })
}

func TestUCSCriticalAdjustment(t *testing.T) {
	// The UCS of the scenario before adjustment, read from a dry run.
	e0, _ := newTestEngine(t)
	mustContract(t, e0, Contract{AgentID: "a"})
	criticalSetup(t, e0)
	d0 := dryAct(t, e0, "a", readAct())
	if d0.CrossDimensional.Count == 0 || d0.CrossDimensional.Signals[0].Pattern != "empathetic_exploitation" {
		t.Fatalf("setup: got signals %v, want empathetic_exploitation", d0.CrossDimensional.Signals)
	}
	s, _ := findStep(d0, StepUCSAdjustment)
	u := s.Input.(*UCSAdjustInput).UCS
	if u <= 0.3 || u >= 0.9 {
		t.Fatalf("setup: got unadjusted UCS %v, want within (0.3, 0.9)", u)
	}

	cases := []struct {
		name         string
		allow, deny  float64
		wantAdjusted bool
	}{
		{"strictly between the thresholds", 0.9, 0.3, true},
		{"at or above the allow threshold", u, 0.3, false},
		{"above the allow threshold", u - 0.05, 0.3, false},
		{"at the deny threshold", 0.95, u, false},
		{"below the deny threshold", 0.95, u + 0.01, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AllowThreshold, cfg.DenyThreshold = tc.allow, tc.deny
			e, _ := newTestEngineCfg(t, cfg)
			mustContract(t, e, Contract{AgentID: "a"})
			criticalSetup(t, e)
			d := dryAct(t, e, "a", readAct())
			want := u
			if tc.wantAdjusted {
				want = u - 0.1
			}
			if !approx(d.UCS, want) {
				t.Errorf("got UCS %v, want %v (unadjusted %v)", d.UCS, want, u)
			}
			if !approx(d.CrossDimensional.UCSAdjustment, want-u) {
				t.Errorf("got recorded adjustment %v, want %v", d.CrossDimensional.UCSAdjustment, want-u)
			}
		})
	}
}

func TestUCSNoAdjustmentForNonCriticalSignals(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AllowThreshold = 0.95
	e, _ := newTestEngineCfg(t, cfg)
	mustContract(t, e, Contract{AgentID: "a"})
	// cascade_without_isolation (alert): cascading 0.3, isolation 0.6.
	d := dryAct(t, e, "a", Action{Type: "delete_cache", Target: "x", Parameters: map[string]any{"k": 1}, Reversibility: Compensable})
	if d.CrossDimensional.Count == 0 {
		t.Fatalf("setup: got no signals, want cascade_without_isolation")
	}
	if d.CrossDimensional.UCSAdjustment != 0 {
		t.Errorf("got adjustment %v, want 0 for alerts only", d.CrossDimensional.UCSAdjustment)
	}
}
