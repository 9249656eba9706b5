package governor

import (
	"errors"
	"testing"
	"time"
)

func TestTrustReferenceBehaviours(t *testing.T) {
	outOfScope := Action{Type: "delete", Target: "prod/db", Parameters: map[string]any{"k": 1}}
	cases := []struct {
		name      string
		allows    int
		denies    int
		wantTrust float64
		wantViol  int
	}{
		{"a new agent starts at 0.5", 0, 0, 0.5, 0},
		{"one DENY", 0, 1, 0.45, 1},
		{"one ALLOW", 1, 0, 0.51, 0},
		{"44 successes", 44, 0, 0.94, 0},
		{"45 successes reach 0.95", 45, 0, 0.95, 0},
		{"and stay there", 60, 0, 0.95, 0},
		{"20 out-of-scope actions floor at 0.05", 0, 20, 0.05, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read", "list"}})
			allowN(t, e, clk, "a", tc.allows)
			for range tc.denies {
				if d := evalAct(t, e, "a", outOfScope); d.Verdict != Deny {
					t.Fatalf("got %s, want DENY", d.Verdict)
				}
				clk.Advance(time.Second)
			}
			st := mustStatus(t, e, "a")
			if !approx(st.Trust, tc.wantTrust) {
				t.Errorf("got trust %v, want %v", st.Trust, tc.wantTrust)
			}
			if st.Violations != tc.wantViol {
				t.Errorf("got violations %d, want %d", st.Violations, tc.wantViol)
			}
		})
	}
}

func TestTrustOutOfScopeDescentAndMandatoryReview(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read"}})
	outOfScope := Action{Type: "delete", Target: "prod/db", Parameters: map[string]any{"k": 1}}
	for k := 1; k <= 20; k++ {
		evalAct(t, e, "a", outOfScope)
		clk.Advance(time.Second)
		want := max(0.5-0.05*float64(k), 0.05)
		if got := mustStatus(t, e, "a").Trust; !approx(got, want) {
			t.Fatalf("after %d out-of-scope actions: got trust %v, want %v", k, got, want)
		}
		// An in-scope read: held for a human exactly when trust is below 0.3.
		d := dryAct(t, e, "a", readAct())
		ho := scoreOf(t, d, DimHumanOverride)
		if wantVeto := want < 0.3-1e-12; ho.Veto != wantVeto {
			t.Fatalf("trust %v: got human_override veto %v, want %v", want, ho.Veto, wantVeto)
		}
		if ho.Veto && (d.Verdict != Escalate || d.Tier != 1) {
			t.Fatalf("trust %v: got %s at tier %d, want ESCALATE at tier 1", want, d.Verdict, d.Tier)
		}
	}
}

func TestDecayedTrust(t *testing.T) {
	cfg := DefaultConfig()
	cases := []struct {
		name  string
		trust float64
		idle  time.Duration // 0: never evaluated
		want  float64
	}{
		{"never evaluated: no decay", 0.8, 0, 0.8},
		{"idle 35 s: no decay", 0.6, 35 * time.Second, 0.6},
		{"idle 36 s: decays", 0.6, 36 * time.Second, 0.5999},
		{"from above: 2 idle hours", 0.6, 2 * time.Hour, 0.58},
		{"from below: 3 idle hours", 0.4, 3 * time.Hour, 0.43},
		{"from above: no overshoot", 0.52, 5 * time.Hour, 0.5},
		{"from below: no overshoot", 0.45, 10 * time.Hour, 0.5},
		{"from the top: a long absence ends at the baseline", 0.95, 1000 * time.Hour, 0.5},
		{"at the baseline: unchanged", 0.5, 10 * time.Hour, 0.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newAgentState(&cfg)
			st.Trust = tc.trust
			if tc.idle > 0 {
				st.LastEvaluation = t0
			}
			got, _ := st.decayedTrust(&cfg, t0.Add(tc.idle))
			if !approx(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTrustDecayInThePipeline(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a"})
	withState(t, e, "a", func(st *agentState) { st.Trust, st.LastEvaluation = 0.6, clk.Now() })
	clk.Advance(2 * time.Hour)
	d := evalAct(t, e, "a", readAct())
	s, _ := findStep(d, StepTrustDecay)
	if in, out := s.Input.(*TrustDecayInput), s.Output.(*TrustState); in.Trust != 0.6 || in.IdleSeconds != 7200 || !approx(out.Trust, 0.58) {
		t.Errorf("got trust_decay %+v -> %+v, want 0.6 idle 7200 s -> 0.58", in, out)
	}
	if got := mustStatus(t, e, "a").Trust; !approx(got, 0.59) {
		t.Errorf("got stored trust %v, want 0.59 (decay then ALLOW)", got)
	}
	evs := mustTrustEvents(t, e, "a")
	if len(evs) != 2 || evs[0].Source != "decay" || !approx(evs[0].Before, 0.6) || !approx(evs[0].After, 0.58) || evs[1].Source != "decision" {
		t.Errorf("got events %+v, want a decay event 0.6 -> 0.58 then a decision event", evs)
	}
}

func TestDryRunDoesNotStoreDecay(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a"})
	withState(t, e, "a", func(st *agentState) { st.Trust, st.LastEvaluation = 0.6, clk.Now() })
	clk.Advance(2 * time.Hour)
	if d := dryAct(t, e, "a", readAct()); !approx(d.Pipeline[0].Output.(*TrustState).Trust, 0.58) {
		t.Errorf("got decayed trust %v in the dry run, want 0.58", d.Pipeline[0].Output.(*TrustState).Trust)
	}
	if got := mustStatus(t, e, "a").Trust; got != 0.6 {
		t.Errorf("got stored trust %v after a dry run, want 0.6", got)
	}
}

func TestCallFinished(t *testing.T) {
	cases := []struct {
		name      string
		outcomes  []CallOutcome
		wantTrust float64
	}{
		{"completed call +0.005", []CallOutcome{CallCompleted}, 0.505},
		{"interrupted call -0.03", []CallOutcome{CallInterrupted}, 0.47},
		{"two completed, one interrupted", []CallOutcome{CallCompleted, CallCompleted, CallInterrupted}, 0.48},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a"})
			for _, o := range tc.outcomes {
				if err := e.CallStarted("a"); err != nil {
					t.Fatal(err)
				}
				if err := e.CallFinished("a", o); err != nil {
					t.Fatal(err)
				}
			}
			st := mustStatus(t, e, "a")
			if !approx(st.Trust, tc.wantTrust) {
				t.Errorf("got trust %v, want %v", st.Trust, tc.wantTrust)
			}
			if st.InFlight != 0 {
				t.Errorf("got in flight %d, want 0", st.InFlight)
			}
			evs := mustTrustEvents(t, e, "a")
			if len(evs) != len(tc.outcomes) {
				t.Fatalf("got %d trust events, want %d", len(evs), len(tc.outcomes))
			}
			for _, ev := range evs {
				if ev.Source != "call" {
					t.Errorf("got event source %q, want call", ev.Source)
				}
			}
		})
	}
	t.Run("finishing more calls than started keeps in flight at 0", func(t *testing.T) {
		e, _ := engineWith(t, Contract{AgentID: "a"})
		if err := e.CallFinished("a", CallCompleted); err != nil {
			t.Fatal(err)
		}
		if got := mustStatus(t, e, "a").InFlight; got != 0 {
			t.Errorf("got in flight %d, want 0", got)
		}
	})
	t.Run("unknown agent", func(t *testing.T) {
		e, _ := newTestEngine(t)
		if err := e.CallStarted("x"); !errors.Is(err, ErrUnknownAgent) {
			t.Errorf("CallStarted: got %v, want ErrUnknownAgent", err)
		}
		if err := e.CallFinished("x", CallCompleted); !errors.Is(err, ErrUnknownAgent) {
			t.Errorf("CallFinished: got %v, want ErrUnknownAgent", err)
		}
	})
}

func TestTrustEventThreshold(t *testing.T) {
	cfg := DefaultConfig()
	cases := []struct {
		name  string
		start float64
		delta float64
		want  int
	}{
		{"0.0005 up is not an event", 0.5, 0.0005, 0},
		{"exactly 0.001 up is not an event", 0.5, 0.001, 0},
		{"exactly 0.001 down is not an event", 0.5, -0.001, 0},
		{"0.0011 up is an event", 0.5, 0.0011, 1},
		{"0.002 down is an event", 0.5, -0.002, 1},
		{"a change clamped away is not an event", 0.95, 0.01, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newAgentState(&cfg)
			st.Trust = tc.start
			st.adjustTrust(&cfg, t0, tc.delta, "test", "test")
			if got := st.TrustEvents.len(); got != tc.want {
				t.Errorf("got %d events, want %d", got, tc.want)
			}
		})
	}
}

func TestTrustEventsCappedAt500(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a"})
	for i := range 600 {
		o := CallCompleted
		if i%2 == 1 {
			o = CallInterrupted
		}
		_ = e.CallStarted("a")
		if err := e.CallFinished("a", o); err != nil {
			t.Fatal(err)
		}
	}
	evs := mustTrustEvents(t, e, "a")
	if len(evs) != 500 {
		t.Fatalf("got %d events, want 500", len(evs))
	}
	if last, trust := evs[len(evs)-1], mustStatus(t, e, "a").Trust; last.After != trust {
		t.Errorf("got last event after %v, want the current trust %v", last.After, trust)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Before != evs[i-1].After {
			t.Fatalf("event %d: got before %v, want the previous after %v (events must be consecutive, oldest dropped)", i, evs[i].Before, evs[i-1].After)
		}
	}
}

func TestTrustDirection(t *testing.T) {
	mk := func(groups ...any) []TrustEvent {
		var out []TrustEvent
		for i := 0; i+1 < len(groups); i += 2 {
			n, d := groups[i].(int), groups[i+1].(float64)
			for range n {
				out = append(out, TrustEvent{Before: 0.5, After: 0.5 + d})
			}
		}
		return out
	}
	cases := []struct {
		name   string
		events []TrustEvent
		want   string
	}{
		{"no events", nil, "stable"},
		{"all negligible", mk(5, 0.0015), "stable"},
		{"mostly negligible (70 %)", mk(7, 0.001, 3, 0.01), "stable"},
		{"60 % negligible is not mostly", mk(6, 0.001, 4, 0.01), "rising"},
		{"mostly negligible with ups and downs", mk(7, -0.001, 2, 0.01, 1, -0.05), "stable"},
		{"ups only", mk(10, 0.01), "rising"},
		{"downs only", mk(10, -0.05), "falling"},
		{"minority 20 %: rising", mk(8, 0.01, 2, -0.05), "rising"},
		{"minority 30 %: volatile", mk(7, 0.01, 3, -0.05), "volatile"},
		{"even split: volatile", mk(5, 0.01, 5, -0.05), "volatile"},
		{"minority 20 % up: falling", mk(2, 0.01, 8, -0.05), "falling"},
		{"a 0.002 change is not negligible", mk(3, 0.002), "rising"},
		{"only the last 20 events count", mk(30, -0.05, 20, 0.01), "rising"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := trustDirection(tc.events, 20, 0.002); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestTrustDirectionFromDecisions(t *testing.T) {
	allow, deny := readAct(), Action{Type: "delete", Target: "x", Parameters: map[string]any{"k": 1}}
	cases := []struct {
		name string
		seq  []Action
		want string
	}{
		{"new agent", nil, "stable"},
		{"three ALLOWs", []Action{allow, allow, allow}, "rising"},
		{"two DENYs", []Action{deny, deny}, "falling"},
		{"alternating", []Action{allow, deny, allow, deny}, "volatile"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read"}})
			for _, a := range tc.seq {
				evalAct(t, e, "a", a)
				clk.Advance(time.Second)
			}
			if got := mustStatus(t, e, "a").TrustDirection; got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSlope(t *testing.T) {
	cases := []struct {
		name string
		ys   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one point", []float64{0.7}, 0},
		{"flat", []float64{0.5, 0.5, 0.5}, 0},
		{"unit line", []float64{0, 1, 2, 3}, 1},
		{"two points down", []float64{3, 1}, -2},
		{"trust rising by ALLOWs", []float64{0.51, 0.52, 0.53}, 0.01},
		{"noisy line", []float64{1, 3, 2, 4}, 0.8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := slope(tc.ys); !approx(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTrustVelocity(t *testing.T) {
	deny := Action{Type: "delete", Target: "x", Parameters: map[string]any{"k": 1}}
	cases := []struct {
		name   string
		allows int
		denies int
		want   float64
	}{
		{"new agent", 0, 0, 0},
		{"three ALLOWs", 3, 0, 0.01},
		{"three ALLOWs then two DENYs", 3, 2, slope([]float64{0.51, 0.52, 0.53, 0.48, 0.43})},
		{"only the last 20 evaluations", 45, 0, 0.01},
		{"flat at the ceiling", 70, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read", "list"}})
			allowN(t, e, clk, "a", tc.allows)
			for range tc.denies {
				evalAct(t, e, "a", deny)
			}
			if got := mustStatus(t, e, "a").TrustVelocity; !approx(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
