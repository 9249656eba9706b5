package controlplane_test

import (
	"slices"
	"testing"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// driftFixture is the test fleet with real drift: a2 and a3 have acted far
// from their archetypes' priors (a2 drifts at high severity), and a tighten
// of a3 makes its drift critical against its effective thresholds. a1 and a4
// have not acted.
func driftFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	for range 20 {
		for _, agent := range []string{"a2", "a3"} {
			f.eval(t, agent, governor.Action{Type: "delete", Target: "weird/thing"})
		}
	}
	f.issue(t, tighten(0.5, "a3"))
	want := map[string]string{"a1": governor.SeverityNone, "a2": governor.SeverityHigh, "a3": governor.SeverityCritical, "a4": governor.SeverityNone}
	for agent, sev := range want {
		if got := f.status(t, agent).Severity; got != sev {
			t.Fatalf("setup: %s has drift severity %s (overall %.3f), want %s", agent, got, f.status(t, agent).Drift.Overall, sev)
		}
	}
	return f
}

func TestTargetCriteriaAreIntersected(t *testing.T) {
	f := driftFixture(t)
	cases := []struct {
		name   string
		target controlplane.Target
		want   []string
	}{
		{"agent ids; unknown ones resolve to nothing", controlplane.Target{AgentIDs: []string{"a3", "ghost", "a1", "a1"}}, []string{"a1", "a3"}},
		{"archetype", controlplane.Target{Archetype: "financial-analyst"}, []string{"a1", "a2"}},
		{"team", controlplane.Target{Team: "payments"}, []string{"a1", "a3", "a4"}},
		{"archetype and team", controlplane.Target{Archetype: "financial-analyst", Team: "payments"}, []string{"a1"}},
		{"agent ids and team", controlplane.Target{AgentIDs: []string{"a1", "a2"}, Team: "payments"}, []string{"a1"}},
		{"drifting is moderate or above", controlplane.Target{DriftStatus: "drifting"}, []string{"a2", "a3"}},
		{"critical is critical only", controlplane.Target{DriftStatus: "critical"}, []string{"a3"}},
		{"drifting and team", controlplane.Target{DriftStatus: "drifting", Team: "payments"}, []string{"a3"}},
		{"drifting and archetype", controlplane.Target{DriftStatus: "drifting", Archetype: "financial-analyst"}, []string{"a2"}},
		{"critical and agent ids", controlplane.Target{DriftStatus: "critical", AgentIDs: []string{"a1", "a2"}}, []string{}},
		{"all four", controlplane.Target{AgentIDs: []string{"a2", "a3"}, Archetype: "customer-experience", Team: "payments", DriftStatus: "critical"}, []string{"a3"}},
		{"unknown agents only", controlplane.Target{AgentIDs: []string{"ghost"}}, []string{}},
		{"a team nobody is in", controlplane.Target{Team: "nobody"}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := f.issue(t, controlplane.IssueRequest{Type: "broadcast_reminder", Target: tc.target,
				Parameters: controlplane.Parameters{Message: tc.name}})
			if !slices.Equal(d.ResolvedAgents, tc.want) {
				t.Errorf("got resolved agents %v, want %v", d.ResolvedAgents, tc.want)
			}
			for _, agent := range f.e.Agents() {
				bound := slices.Contains(f.dryEval(t, agent, readAct()).Directives, d.ID)
				if want := slices.Contains(tc.want, agent); bound != want {
					t.Errorf("%s: got bound %v, want %v", agent, bound, want)
				}
			}
			f.expire(t, d.ID)
		})
	}
}

func TestTargetsAreResolvedWhenIssued(t *testing.T) {
	f := newFixture(t)
	q := f.issue(t, controlplane.IssueRequest{Type: "quarantine", Target: controlplane.Target{Team: "risk"}})
	if err := f.e.SetContract(governor.Contract{AgentID: "a5", Team: "risk", Scope: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.ResolvedAgents, []string{"a2"}) {
		t.Fatalf("got resolved agents %v, want [a2]", q.ResolvedAgents)
	}
	f.wantQuarantined(t, "a2", true)
	f.wantQuarantined(t, "a5", false)
}
