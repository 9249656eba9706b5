package governor

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPipelineSteps(t *testing.T) {
	upTo := func(last string) []string { return fullPipeline[:slices.Index(fullPipeline, last)+1] }
	withoutTier2 := slices.DeleteFunc(slices.Clone(fullPipeline), func(s string) bool { return s == StepTier2 })
	cases := []struct {
		name     string
		allow    float64
		contract Contract
		overlay  *Overlay
		act      Action
		want     []string
	}{
		{"vetoed: stops at tier1", 0, Contract{Scope: []string{"read"}}, nil, writeAct(), upTo(StepTier1)},
		{"decided by thresholds: stops at tier2", 0, Contract{}, nil, readAct(), upTo(StepTier2)},
		{"deliberated: all eleven steps", 0.95, Contract{}, nil, readAct(), fullPipeline},
		{"irreversible: tier2 skipped", 0, Contract{}, nil, Action{Type: "delete_x", Target: "x", Parameters: map[string]any{"k": 1}}, withoutTier2},
		{"quarantined: one step", 0, Contract{}, &Overlay{Quarantined: true}, readAct(), []string{StepQuarantine}},
		{"suspended: one step", 0, Contract{}, &Overlay{Suspended: true}, readAct(), []string{StepSuspension}},
		{"quarantined and suspended: quarantine first", 0, Contract{}, &Overlay{Quarantined: true, Suspended: true}, readAct(), []string{StepQuarantine}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.allow != 0 {
				cfg.AllowThreshold = tc.allow
			}
			e, _ := newTestEngineCfg(t, cfg)
			c := tc.contract
			c.AgentID = "a"
			mustContract(t, e, c)
			if tc.overlay != nil {
				e.SetOverlays(Overlays{"a": tc.overlay})
			}
			d := evalAct(t, e, "a", tc.act) // checkPipeline: one deciding step, last
			if got := stepNames(d); !slices.Equal(got, tc.want) {
				t.Errorf("got steps %v, want %v", got, tc.want)
			}
			for _, s := range d.Pipeline {
				if s.Input == nil || s.Output == nil {
					t.Errorf("step %s: got input %v output %v, want both recorded", s.Name, s.Input, s.Output)
				}
			}
		})
	}
}

func TestQuarantineBypassesEverything(t *testing.T) {
	approved := Action{Type: "export_report", Target: "reports/q1", Parameters: map[string]any{"format": "pdf"}}
	cases := []struct {
		name    string
		overlay *Overlay
		act     Action
	}{
		{"in-scope read", &Overlay{Quarantined: true}, readAct()},
		{"approved action", &Overlay{Quarantined: true}, approved},
		{"quarantined and suspended", &Overlay{Quarantined: true, Suspended: true}, readAct()},
		{"quarantined with a holding invariant", &Overlay{Quarantined: true, Invariants: []*Invariant{mustInvariant(t, "ok", "true", "")}}, readAct()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read", "export_report"}, HumanOverride: []string{"export_report"}})
			if err := e.GrantApproval("a", ActionDigest("a", &approved), clk.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			e.SetOverlays(Overlays{"a": tc.overlay})
			before := mustStatus(t, e, "a")
			d := evalAct(t, e, "a", tc.act)
			if d.Verdict != Escalate || d.Tier != 0 || !slices.Equal(stepNames(d), []string{StepQuarantine}) {
				t.Errorf("got %s at tier %d by %v, want ESCALATE at tier 0 by [quarantine] only", d.Verdict, d.Tier, stepNames(d))
			}
			if len(d.Scores) != 0 || d.ToPass.Requires == "" {
				t.Errorf("got %d scores and requires %q, want none and a requirement", len(d.Scores), d.ToPass.Requires)
			}
			if after := mustStatus(t, e, "a"); !reflect.DeepEqual(after, before) {
				t.Errorf("got status %+v, want the pre-check to change nothing (%+v)", after, before)
			}
			// The approval was not used up by the quarantined attempt.
			e.SetOverlays(nil)
			if d := evalAct(t, e, "a", approved); d.Verdict != Allow {
				t.Errorf("after release: got %s for the approved action, want ALLOW (%s)", d.Verdict, d.Reasoning)
			}
		})
	}
}

func TestSuspension(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a"})
	e.SetOverlays(Overlays{"a": {Suspended: true, Directives: []string{"dir_s"}}})
	d := evalAct(t, e, "a", readAct())
	if d.Verdict != Suspend || d.Tier != 0 || !slices.Equal(stepNames(d), []string{StepSuspension}) {
		t.Errorf("got %s at tier %d by %v, want SUSPEND at tier 0 by [suspension]", d.Verdict, d.Tier, stepNames(d))
	}
	if in := d.Pipeline[0].Input.(*PrecheckState); !in.Suspended || !slices.Equal(in.Directives, []string{"dir_s"}) {
		t.Errorf("got pre-check input %+v, want suspended with its directive", in)
	}
	if s := mustStatus(t, e, "a"); s.Observations != 0 || !s.Suspended || s.Trust != 0.5 {
		t.Errorf("got status observations %d suspended %v trust %v, want 0 true 0.5", s.Observations, s.Suspended, s.Trust)
	}
}

func TestDryRunLeavesStateUnchanged(t *testing.T) {
	approved := Action{Type: "export_report", Target: "reports/q1", Parameters: map[string]any{"format": "pdf"}}
	e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read", "list", "export_report"}, HumanOverride: []string{"export_report"},
		Limits: Limits{ActionsPerMinute: 100}, Anchors: map[string]string{"refund": "x"}})
	allowN(t, e, clk, "a", 25)
	clk.Advance(2 * time.Hour) // decay is computed but must not be stored
	if err := e.GrantApproval("a", ActionDigest("a", &approved), clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	status, events, drift := mustStatus(t, e, "a"), mustTrustEvents(t, e, "a"), mustDriftHistory(t, e, "a")
	snap, _ := e.Snapshot("a")
	dry := []Request{
		{AgentID: "a", Action: readAct(), DryRun: true},
		{AgentID: "a", Action: approved, DryRun: true},
		{AgentID: "a", Action: Action{Type: "delete", Target: "x"}, DryRun: true},
		{AgentID: "a", Action: readAct(), Context: Context{Instruction: "refund"}, DryRun: true},
	}
	for range 10 {
		for _, req := range dry {
			evalReq(t, e, req)
		}
	}
	if got := mustStatus(t, e, "a"); !reflect.DeepEqual(got, status) {
		t.Errorf("got status %+v, want %+v", got, status)
	}
	if got := mustTrustEvents(t, e, "a"); !reflect.DeepEqual(got, events) {
		t.Errorf("got %d trust events, want %d", len(got), len(events))
	}
	if got := mustDriftHistory(t, e, "a"); !reflect.DeepEqual(got, drift) {
		t.Errorf("got %d drift points, want %d", len(got), len(drift))
	}
	snap2, _ := e.Snapshot("a")
	if a, b := mustJSON(t, snap), mustJSON(t, snap2); a != b {
		t.Errorf("got a different snapshot after dry runs, want the same state")
	}
	// The dry runs did not use up the approval.
	if d := evalAct(t, e, "a", approved); scoreOf(t, d, DimHumanOverride).Score != 1 {
		t.Errorf("got human_override %v, want 1 (approval still there)", scoreOf(t, d, DimHumanOverride).Score)
	}
}

func mustJSON(t *testing.T, s *Snapshot) string {
	t.Helper()
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot time differs; the state must not.
	_, state, _ := strings.Cut(string(b), `"state":`)
	return state
}

func TestUnknownAgent(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a"})
	calls := map[string]func() error{
		"Evaluate":          func() error { _, err := e.Evaluate(Request{AgentID: "x", Action: readAct()}); return err },
		"Status":            func() error { _, err := e.Status("x"); return err },
		"Snapshot":          func() error { _, err := e.Snapshot("x"); return err },
		"DriftHistory":      func() error { _, err := e.DriftHistory("x"); return err },
		"TrustEvents":       func() error { _, err := e.TrustEvents("x"); return err },
		"AcknowledgeAlerts": func() error { return e.AcknowledgeAlerts("x") },
		"GrantApproval":     func() error { return e.GrantApproval("x", "d", time.Now()) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, ErrUnknownAgent) {
				t.Errorf("got %v, want ErrUnknownAgent", err)
			}
		})
	}
}

func TestCausalLinks(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a", Scope: []string{"read"}})
	first := evalAct(t, e, "a", readAct())
	if first.CausalLinks == nil || len(first.CausalLinks) != 0 {
		t.Errorf("first decision: got links %#v, want an empty list", first.CausalLinks)
	}
	clk.Advance(time.Second)
	second := evalAct(t, e, "a", Action{Type: "write", Target: "x", Parameters: map[string]any{"k": 1}})
	want := CausalLink{ActionID: first.ActionID, Kind: "predecessor", TrustBefore: 0.5, TrustAfter: 0.51}
	if len(second.CausalLinks) != 1 {
		t.Fatalf("second decision: got links %+v, want one", second.CausalLinks)
	}
	got := second.CausalLinks[0]
	if got.ActionID != want.ActionID || got.Kind != want.Kind || !approx(got.TrustBefore, 0.5) || !approx(got.TrustAfter, 0.51) || !approx(got.Influence, 0.01) {
		t.Errorf("second decision: got link %+v, want %+v with influence 0.01", got, want)
	}
	clk.Advance(time.Second)
	third := evalAct(t, e, "a", readAct())
	if l := third.CausalLinks[0]; l.ActionID != second.ActionID || !approx(l.TrustBefore, 0.51) || !approx(l.TrustAfter, 0.46) || !approx(l.Influence, -0.05) {
		t.Errorf("third decision: got link %+v, want the DENY before it: 0.51 -> 0.46", l)
	}
	// A dry run links to the last real decision but is not linked to.
	dry := dryAct(t, e, "a", readAct())
	if dry.CausalLinks[0].ActionID != third.ActionID {
		t.Errorf("dry run: got link to %s, want %s", dry.CausalLinks[0].ActionID, third.ActionID)
	}
	fourth := evalAct(t, e, "a", readAct())
	if fourth.CausalLinks[0].ActionID != third.ActionID {
		t.Errorf("fourth decision: got link to %s, want %s (not the dry run)", fourth.CausalLinks[0].ActionID, third.ActionID)
	}
}

func TestActionIDs(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a"})
	d := evalAct(t, e, "a", Action{ID: "act_given", Type: "read", Target: "x"})
	if d.ActionID != "act_given" || d.Action.ID != "act_given" {
		t.Errorf("got %s/%s, want act_given", d.ActionID, d.Action.ID)
	}
	a, b := evalAct(t, e, "a", readAct()), evalAct(t, e, "a", readAct())
	if !strings.HasPrefix(a.ActionID, "act_") || a.ActionID == b.ActionID {
		t.Errorf("got ids %s and %s, want distinct act_ ids", a.ActionID, b.ActionID)
	}
}

func TestEvaluateRecoversPanics(t *testing.T) {
	boom := deliberatorFunc(func(DeliberateArgs) (Verdict, string, bool) { panic("boom") })
	cfg := DefaultConfig()
	cfg.AllowThreshold = 0.95
	e, _ := newTestEngineCfg(t, cfg, WithDeliberators(boom))
	mustContract(t, e, Contract{AgentID: "a"})
	d, err := e.Evaluate(Request{AgentID: "a", Action: readAct()})
	if !errors.Is(err, ErrUndecidable) || d != nil {
		t.Fatalf("got %v, %v, want nil and ErrUndecidable", d, err)
	}
	// The agent is still usable: its lock was released.
	if _, err := e.Status("a"); err != nil {
		t.Fatal(err)
	}
}

func TestRegistry(t *testing.T) {
	e, clk := newTestEngine(t)
	mustContract(t, e, Contract{AgentID: "b", Scope: []string{"read"}})
	mustContract(t, e, Contract{AgentID: "a"})
	if got := e.Agents(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("got agents %v, want [a b]", got)
	}
	allowN(t, e, clk, "a", 3)
	// Replacing a contract keeps the agent's state.
	mustContract(t, e, Contract{AgentID: "a", Scope: []string{"read"}})
	s := mustStatus(t, e, "a")
	if s.Observations != 3 || !approx(s.Trust, 0.53) || !slices.Equal(s.Contract.Scope, []string{"read"}) {
		t.Errorf("got observations %d trust %v scope %v, want 3, 0.53, [read]", s.Observations, s.Trust, s.Contract.Scope)
	}
	if !e.RemoveAgent("a") || e.RemoveAgent("a") {
		t.Errorf("RemoveAgent: want true then false")
	}
	if _, ok := e.Contract("a"); ok {
		t.Errorf("got a contract for a removed agent, want none")
	}
	mustContract(t, e, Contract{AgentID: "a"})
	if s := mustStatus(t, e, "a"); s.Observations != 0 || s.Trust != 0.5 {
		t.Errorf("re-added agent: got observations %d trust %v, want a fresh state", s.Observations, s.Trust)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"deny above allow", func(c *Config) { c.DenyThreshold, c.AllowThreshold = 0.8, 0.7 }, false},
		{"allow above 1", func(c *Config) { c.AllowThreshold = 1.1 }, false},
		{"missing weight", func(c *Config) { delete(c.Weights, DimTransparency) }, false},
		{"zero weight", func(c *Config) { c.Weights[DimTransparency] = 0 }, false},
		{"trust bounds inverted", func(c *Config) { c.TrustMin, c.TrustMax = 0.9, 0.1 }, false},
		{"baseline outside bounds", func(c *Config) { c.TrustBaseline = 0.99 }, false},
		{"drift min window above the window", func(c *Config) { c.DriftMinWindow = 200 }, false},
		{"thresholds not increasing", func(c *Config) { c.Thresholds.High = 0.1 }, false},
		{"erosion bands out of order", func(c *Config) { c.Erosion[0], c.Erosion[1] = c.Erosion[1], c.Erosion[0] }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			_, err := New(cfg)
			if (err == nil) != tc.ok {
				t.Errorf("got %v, want ok %v", err, tc.ok)
			}
		})
	}
	t.Run("the engine keeps its own weights", func(t *testing.T) {
		cfg := DefaultConfig()
		e, _ := New(cfg)
		cfg.Weights[DimTransparency] = 9
		if got := e.Config().Weights[DimTransparency]; got != 0.6 {
			t.Errorf("got weight %v, want 0.6", got)
		}
	})
}

func TestConcurrentEvaluations(t *testing.T) {
	const (
		workers = 8
		iters   = 40
	)
	e, clk := newTestEngine(t)
	contract := func(id string, n int) Contract {
		scope := []string{"read", "list", "write"}
		if n%2 == 1 {
			scope = append(scope, "archive")
		}
		return Contract{AgentID: id, Archetype: "data-processing", Scope: scope, Anchors: map[string]string{"refund": "x"}}
	}
	private := func(w, i int) string { return fmt.Sprintf("agent-%02d", 2*w+i%2) }
	for w := range workers {
		mustContract(t, e, contract(private(w, 0), 0))
		mustContract(t, e, contract(private(w, 1), 0))
	}
	mustContract(t, e, contract("shared", 0))

	var wg sync.WaitGroup
	done := make(chan struct{})
	// Directives and contracts change while agents are evaluated. No overlay
	// quarantines or suspends, so every evaluation is an observation.
	inv := mustInvariant(t, "no_archive", `action.type != "archive"`, "")
	wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			default:
			}
			ov := Overlays{"shared": {ThresholdFactor: 0.5 + float64(n%3)*0.25, Advisory: fmt.Sprint("n", n)}}
			if n%2 == 0 {
				ov["agent-00"] = &Overlay{Invariants: []*Invariant{inv}, ReAnchors: map[string]string{"refund": fmt.Sprint("dir_", n%5)}}
			}
			e.SetOverlays(ov)
			if err := e.SetContract(contract("shared", n)); err != nil {
				t.Error(err)
				return
			}
			if err := e.SetContract(contract(private(n%workers, n), n)); err != nil {
				t.Error(err)
				return
			}
			_, _ = e.Status("shared")
			_, _ = e.Snapshot("shared")
			time.Sleep(50 * time.Microsecond)
		}
	})
	errs := make(chan error, workers)
	var workersWG sync.WaitGroup
	for w := range workers {
		workersWG.Go(func() {
			types := []string{"read", "list", "write", "archive"}
			for i := range iters {
				act := Action{Type: types[(w+i)%len(types)], Target: "data/x", Parameters: map[string]any{"i": i}}
				ctx := Context{}
				if i%3 == 0 {
					ctx.Instruction = "refund this"
				}
				for _, id := range []string{private(w, i), "shared"} {
					if _, err := e.Evaluate(Request{AgentID: id, Action: act, Context: ctx}); err != nil {
						errs <- err
						return
					}
				}
				if _, err := e.Evaluate(Request{AgentID: "shared", Action: act, DryRun: true}); err != nil {
					errs <- err
					return
				}
				_ = e.CallStarted("shared")
				_ = e.CallFinished("shared", CallCompleted)
				clk.Advance(time.Second)
			}
		})
	}
	workersWG.Wait()
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := mustStatus(t, e, "shared").Observations; got != workers*iters {
		t.Errorf("shared: got %d observations, want %d", got, workers*iters)
	}
	for w := range workers {
		for i := range 2 {
			id := private(w, i)
			if got := mustStatus(t, e, id).Observations; got != iters/2 {
				t.Errorf("%s: got %d observations, want %d", id, got, iters/2)
			}
		}
	}
	if got := mustStatus(t, e, "shared").InFlight; got != 0 {
		t.Errorf("shared: got %d in flight, want 0", got)
	}
}

func TestWithoutTrace(t *testing.T) {
	e, err := New(DefaultConfig(), WithoutTrace())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetContract(Contract{AgentID: "a", Scope: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		act  Action
		want Verdict
	}{
		{"allowed", Action{Type: "read", Target: "x", Parameters: map[string]any{"q": 1.0}}, Allow},
		{"vetoed", Action{Type: "delete", Target: "x"}, Deny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := e.Evaluate(Request{AgentID: "a", Action: tc.act})
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != tc.want || len(d.Pipeline) != 0 || len(d.Scores) != 13 {
				t.Errorf("got %v with %d steps and %d scores; want %v, no steps, 13 scores", d.Verdict, len(d.Pipeline), len(d.Scores), tc.want)
			}
		})
	}
}
