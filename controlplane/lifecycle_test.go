package controlplane_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

func TestQuarantineEscalatesBeforeAnyOtherCheck(t *testing.T) {
	transfer := governor.Action{Type: "transfer", Target: "bank/acct/1", Parameters: map[string]any{"amount": 10.0}}
	cases := []struct {
		name  string
		agent string
		act   governor.Action
		setup func(t *testing.T, f *fixture)
	}{
		{"an allowed read", "a1", readAct(), nil},
		{"an irreversible delete", "a1", governor.Action{Type: "delete", Target: "prod/db"}, nil},
		{"an action an enforce invariant vetoes", "a1", governor.Action{Type: "read", Target: "prod/db"}, func(t *testing.T, f *fixture) {
			f.issue(t, controlplane.IssueRequest{Type: "enforce", Target: controlplane.Target{AgentIDs: []string{"a1"}},
				Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: "no_prod", Expr: `!action.target.startsWith("prod/")`}}}})
		}},
		{"an action with a granted approval", "a4", transfer, func(t *testing.T, f *fixture) {
			if err := f.e.GrantApproval("a4", governor.ActionDigest("a4", &transfer), t0.Add(time.Hour)); err != nil {
				t.Fatalf("GrantApproval: %v", err)
			}
		}},
		{"a constitutional rule would deny", "a1", readAct(), func(t *testing.T, f *fixture) {
			if err := f.e.SetRules([]governor.Rule{{Name: "nothing", Expr: "false"}}); err != nil {
				t.Fatalf("SetRules: %v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			q := f.issue(t, quarantine(tc.agent))
			d := f.eval(t, tc.agent, tc.act)
			if !quarantined(d) {
				t.Fatalf("got %s by %v, want ESCALATE by the quarantine step alone", d.Verdict, steps(d))
			}
			if d.Tier != 0 || !slices.Contains(d.Directives, q.ID) {
				t.Errorf("got tier %d directives %v, want tier 0 with %s", d.Tier, d.Directives, q.ID)
			}
			if s := f.status(t, tc.agent); !s.Quarantined || !slices.Equal(s.Directives, d.Directives) {
				t.Errorf("status: got quarantined %v directives %v, want true %v", s.Quarantined, s.Directives, d.Directives)
			}
		})
	}
}

func TestApprovalSurvivesQuarantineAndWorksAfterRelease(t *testing.T) {
	f := newFixture(t)
	transfer := governor.Action{Type: "transfer", Target: "bank/acct/1", Parameters: map[string]any{"amount": 10.0}}
	if d := f.eval(t, "a4", transfer); !slices.Contains(d.Vetoes, "human_override") {
		t.Fatalf("before: got vetoes %v, want human_override", d.Vetoes)
	}
	if err := f.e.GrantApproval("a4", governor.ActionDigest("a4", &transfer), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	f.issue(t, quarantine("a4"))
	if d := f.eval(t, "a4", transfer); !quarantined(d) {
		t.Fatalf("quarantined with an approval: got %s by %v, want the quarantine step", d.Verdict, steps(d))
	}
	f.issue(t, release("a4"))
	if d := f.eval(t, "a4", transfer); slices.Contains(d.Vetoes, "human_override") || quarantined(d) {
		t.Errorf("after release: got %s vetoes %v, want the approval to pass human_override", d.Verdict, d.Vetoes)
	}
}

func TestReleaseRestoresEvaluation(t *testing.T) {
	type step struct {
		release          []string
		wantQuarantined  map[string]bool // agent -> quarantined after the step
		wantActive       []int           // indexes of the quarantines still active
		wantReleasedFrom []int           // quarantines a DIRECTIVE_RELEASED event names, cumulative
	}
	cases := []struct {
		name        string
		quarantines [][]string
		steps       []step
	}{
		{"partial release keeps the other agent quarantined, then both", [][]string{{"a1", "a2"}}, []step{
			{[]string{"a1"}, map[string]bool{"a1": false, "a2": true}, []int{0}, nil},
			{[]string{"a2"}, map[string]bool{"a1": false, "a2": false}, nil, []int{0}},
		}},
		{"releasing both at once", [][]string{{"a1", "a2"}}, []step{
			{[]string{"a2", "a1"}, map[string]bool{"a1": false, "a2": false}, nil, []int{0}},
		}},
		{"an agent in two quarantines is released from both", [][]string{{"a1"}, {"a1", "a2"}}, []step{
			{[]string{"a1"}, map[string]bool{"a1": false, "a2": true}, []int{1}, []int{0}},
		}},
		{"releasing an agent that is not quarantined changes nothing", [][]string{{"a1"}}, []step{
			{[]string{"a3"}, map[string]bool{"a1": true, "a3": false}, []int{0}, nil},
		}},
		{"releasing an unknown agent changes nothing", [][]string{{"a1"}}, []step{
			{[]string{"ghost"}, map[string]bool{"a1": true}, []int{0}, nil},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var qs []controlplane.Directive
			for _, agents := range tc.quarantines {
				qs = append(qs, f.issue(t, quarantine(agents...)))
			}
			for i, s := range tc.steps {
				r := f.issue(t, release(s.release...))
				if r.Status != controlplane.StatusExpired {
					t.Errorf("step %d: release directive has status %s, want expired at once", i, r.Status)
				}
				for agent, want := range s.wantQuarantined {
					f.wantQuarantined(t, agent, want)
				}
				var active []string
				list, _ := f.p.List(context.Background())
				for _, d := range list {
					active = append(active, d.ID)
				}
				var want []string
				for _, j := range s.wantActive {
					want = append(want, qs[j].ID)
				}
				if !slices.Equal(active, want) {
					t.Errorf("step %d: got active %v, want %v", i, active, want)
				}
				var named []string
				for _, e := range f.events(t, controlplane.EventFilter{ContextCode: controlplane.CodeDirectiveReleased}) {
					named = append(named, e.Target)
				}
				want = nil
				for _, j := range s.wantReleasedFrom {
					want = append(want, qs[j].ID)
				}
				slices.Sort(named)
				slices.Sort(want)
				if !slices.Equal(named, want) {
					t.Errorf("step %d: got DIRECTIVE_RELEASED for %v, want %v", i, named, want)
				}
				for _, j := range s.wantReleasedFrom {
					if q := f.get(t, qs[j].ID); q.Status != controlplane.StatusExpired || !q.ExpiredAt.Equal(r.IssuedAt) {
						t.Errorf("step %d: quarantine %d: got %s at %v, want expired at the release's time %v", i, j, q.Status, q.ExpiredAt, r.IssuedAt)
					}
				}
			}
		})
	}
}

func TestPartialReleaseIsRecordedOnTheQuarantine(t *testing.T) {
	f := newFixture(t)
	q := f.issue(t, quarantine("a1", "a2", "a3"))
	f.issue(t, release("a2"))
	got := f.get(t, q.ID)
	if got.Status != controlplane.StatusActive || !slices.Equal(got.Released, []string{"a2"}) || !slices.Equal(got.ResolvedAgents, []string{"a1", "a2", "a3"}) {
		t.Errorf("got status %s resolved %v released %v, want active [a1 a2 a3] [a2]", got.Status, got.ResolvedAgents, got.Released)
	}
	if ov := f.e.Overlay("a2"); ov != nil {
		t.Errorf("a2: got overlay %+v after its release, want none", ov)
	}
}

func TestTightenMultipliesThresholdsAndRelaxRestoresThem(t *testing.T) {
	base := governor.DefaultConfig().Thresholds
	type op struct {
		req    controlplane.IssueRequest
		expire int // index of an earlier op's directive to expire instead (-1: none)
	}
	cases := []struct {
		name string
		ops  []op
		want map[string]float64 // agent -> effective factor after all ops
	}{
		{"one tighten", []op{{tighten(0.5, "a1"), -1}}, map[string]float64{"a1": 0.5, "a2": 1}},
		{"tightens compound", []op{{tighten(0.5, "a1", "a2"), -1}, {tighten(0.8, "a1"), -1}}, map[string]float64{"a1": 0.4, "a2": 0.5}},
		{"a factor above 1 loosens", []op{{tighten(2, "a1"), -1}}, map[string]float64{"a1": 2}},
		{"relax restores the original thresholds", []op{{tighten(0.5, "a1"), -1}, {tighten(0.8, "a1"), -1},
			{controlplane.IssueRequest{Type: "relax", Target: controlplane.Target{AgentIDs: []string{"a1"}}}, -1}}, map[string]float64{"a1": 1}},
		{"relax of one agent keeps the other tightened", []op{{tighten(0.5, "a1", "a2"), -1},
			{controlplane.IssueRequest{Type: "relax", Target: controlplane.Target{AgentIDs: []string{"a2"}}}, -1}}, map[string]float64{"a1": 0.5, "a2": 1}},
		{"expiring one tighten keeps the other", []op{{tighten(0.5, "a1"), -1}, {tighten(0.8, "a1"), -1}, {expire: 0}}, map[string]float64{"a1": 0.8}},
		{"relax does not touch quarantine", []op{{quarantine("a1"), -1},
			{controlplane.IssueRequest{Type: "relax", Target: controlplane.Target{AgentIDs: []string{"a1"}}}, -1}}, map[string]float64{"a1": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var ds []controlplane.Directive
			for _, o := range tc.ops {
				if o.req.Type == "" {
					f.expire(t, ds[o.expire].ID)
					ds = append(ds, controlplane.Directive{})
					continue
				}
				ds = append(ds, f.issue(t, o.req))
			}
			for agent, factor := range tc.want {
				got, want := f.status(t, agent).Thresholds, base.Scale(factor)
				if !approxThresholds(got, want) {
					t.Errorf("%s: got thresholds %+v, want %+v (factor %v)", agent, got, want, factor)
				}
			}
			if tc.ops[0].req.Type == "quarantine" {
				f.wantQuarantined(t, "a1", true)
			}
		})
	}
}

func approxThresholds(a, b governor.Thresholds) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	return eq(a.Low, b.Low) && eq(a.Moderate, b.Moderate) && eq(a.High, b.High) && eq(a.Critical, b.Critical)
}

func TestEnforceAddsAnInvariantThatVetoes(t *testing.T) {
	f := newFixture(t)
	prod := governor.Action{Type: "read", Target: "prod/db"}
	if d := f.eval(t, "a1", prod); d.Verdict != governor.Allow {
		t.Fatalf("before: got %s vetoes %v, want ALLOW", d.Verdict, d.Vetoes)
	}
	e1 := f.issue(t, controlplane.IssueRequest{Type: "enforce", Target: controlplane.Target{AgentIDs: []string{"a1"}},
		Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: "no_prod", Expr: `!action.target.startsWith("prod/")`, Message: "stay out of production"}}}})
	e2 := f.issue(t, controlplane.IssueRequest{Type: "enforce", Target: controlplane.Target{Team: "payments"},
		Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: "no_delete", Expr: `action.type != "delete"`}}}})
	cases := []struct {
		name       string
		agent      string
		act        governor.Action
		want       governor.Verdict
		wantVetoes []string
	}{
		{"a1 in production is vetoed", "a1", prod, governor.Deny, []string{"invariant:no_prod"}},
		{"a1 elsewhere is allowed", "a1", readAct(), governor.Allow, []string{}},
		{"a1 deleting in production fails both", "a1", governor.Action{Type: "delete", Target: "prod/db"}, governor.Deny, []string{"invariant:no_delete", "invariant:no_prod"}},
		{"a2 is not targeted", "a2", prod, governor.Allow, []string{}},
		{"a3 (payments) may not delete", "a3", governor.Action{Type: "delete", Target: "docs/x"}, governor.Deny, []string{"invariant:no_delete"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := f.eval(t, tc.agent, tc.act)
			vetoes := slices.Sorted(slices.Values(d.Vetoes))
			if d.Verdict != tc.want || !slices.Equal(vetoes, tc.wantVetoes) {
				t.Errorf("got %s vetoes %v, want %s %v", d.Verdict, vetoes, tc.want, tc.wantVetoes)
			}
		})
	}
	f.expire(t, e1.ID)
	f.expire(t, e2.ID)
	t.Run("expiry removes the invariants", func(t *testing.T) {
		if d := f.eval(t, "a1", governor.Action{Type: "delete", Target: "prod/db"}); len(d.Vetoes) != 0 {
			t.Errorf("got %s vetoes %v, want no vetoes", d.Verdict, d.Vetoes)
		}
		if d := f.eval(t, "a1", prod); d.Verdict != governor.Allow {
			t.Errorf("got %s, want ALLOW", d.Verdict)
		}
	})
}

func TestReAnchorAndReminderReachTheOverlay(t *testing.T) {
	f := newFixture(t)
	r1 := f.issue(t, controlplane.IssueRequest{Type: "re_anchor", Target: controlplane.Target{AgentIDs: []string{"a1", "a2"}}, Parameters: controlplane.Parameters{Term: "Refund"}})
	r2 := f.issue(t, controlplane.IssueRequest{Type: "re_anchor", Target: controlplane.Target{AgentIDs: []string{"a1"}}, Parameters: controlplane.Parameters{Term: "refund"}})
	r3 := f.issue(t, controlplane.IssueRequest{Type: "re_anchor", Target: controlplane.Target{AgentIDs: []string{"a1"}}, Parameters: controlplane.Parameters{Term: "invoice"}})
	b1 := f.issue(t, controlplane.IssueRequest{Type: "broadcast_reminder", Target: controlplane.Target{Team: "payments"}, Parameters: controlplane.Parameters{Message: "follow the refund policy"}})
	b2 := f.issue(t, controlplane.IssueRequest{Type: "broadcast_reminder", Target: controlplane.Target{AgentIDs: []string{"a1"}}, Parameters: controlplane.Parameters{Message: "you are being watched"}})

	type want struct {
		reAnchors  map[string]string
		advisory   string
		directives []string
	}
	check := func(t *testing.T, agent string, w want) {
		t.Helper()
		ov := f.e.Overlay(agent)
		if ov == nil {
			t.Fatalf("%s: no overlay", agent)
		}
		if len(ov.ReAnchors) != len(w.reAnchors) {
			t.Errorf("%s: got re-anchors %v, want %v", agent, ov.ReAnchors, w.reAnchors)
		}
		for term, id := range w.reAnchors {
			if ov.ReAnchors[term] != id {
				t.Errorf("%s: got re-anchors %v, want %v", agent, ov.ReAnchors, w.reAnchors)
			}
		}
		d := f.eval(t, agent, readAct())
		if d.Advisory != w.advisory || ov.Advisory != w.advisory {
			t.Errorf("%s: got advisory %q (overlay %q), want %q", agent, d.Advisory, ov.Advisory, w.advisory)
		}
		wantIDs := slices.Sorted(slices.Values(w.directives))
		if !slices.Equal(d.Directives, wantIDs) {
			t.Errorf("%s: got directives %v, want %v", agent, d.Directives, wantIDs)
		}
	}
	cases := []struct {
		name   string
		expire string
		agent  string
		want   want
	}{
		{"the newest directive per term and the newest reminder", "", "a1",
			want{map[string]string{"refund": r2.ID, "invoice": r3.ID}, "you are being watched", []string{r1.ID, r2.ID, r3.ID, b1.ID, b2.ID}}},
		{"another agent sees its own", "", "a2", want{map[string]string{"refund": r1.ID}, "", []string{r1.ID}}},
		{"a team reminder", "", "a3", want{map[string]string{}, "follow the refund policy", []string{b1.ID}}},
		{"expiring the newest brings back the older", b2.ID, "a1",
			want{map[string]string{"refund": r2.ID, "invoice": r3.ID}, "follow the refund policy", []string{r1.ID, r2.ID, r3.ID, b1.ID}}},
		{"expiring the newest re_anchor falls back", r2.ID, "a1",
			want{map[string]string{"refund": r1.ID, "invoice": r3.ID}, "follow the refund policy", []string{r1.ID, r3.ID, b1.ID}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.expire != "" {
				f.expire(t, tc.expire)
			}
			check(t, tc.agent, tc.want)
		})
	}
}

func TestThrottleIsSystemOnly(t *testing.T) {
	tests := []struct {
		name    string
		system  bool
		factor  float64
		wantErr string
		want    float64 // the agent's RateFactor
	}{
		{"issued by Vigil", true, 0.5, "", 0.5},
		{"issued by an operator", false, 0.5, "type", 0},
		{"factor above 1", true, 1.5, "parameters.factor", 0},
		{"factor zero", true, 0, "parameters.factor", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.p.Issue(context.Background(), controlplane.IssueRequest{Type: string(controlplane.Throttle), Operator: "optimizer", System: tc.system,
				Target: controlplane.Target{AgentIDs: []string{"a1"}}, Parameters: controlplane.Parameters{Factor: tc.factor}})
			var fe *controlplane.FieldError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (!errors.As(err, &fe) || fe.Field != tc.wantErr):
				t.Fatalf("got %v, want a field error on %s", err, tc.wantErr)
			}
			var got float64
			if ov := f.e.Overlay("a1"); ov != nil {
				got = ov.RateFactor
			}
			if got != tc.want {
				t.Errorf("rate factor: got %v, want %v", got, tc.want)
			}
		})
	}
}
