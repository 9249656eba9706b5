package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// driftingAgent returns an engine whose agent "a" read for a while and
// then switched to deletes: its drift rises.
func driftingAgent(t *testing.T) *governor.Engine {
	t.Helper()
	e, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetContract(governor.Contract{AgentID: "a", Scope: []string{"read", "delete"}}); err != nil {
		t.Fatal(err)
	}
	act := func(typ string, i int) {
		if _, err := e.Evaluate(governor.Request{AgentID: "a", Action: governor.Action{Type: typ, Target: fmt.Sprintf("db/%s/%d", typ, i%7)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		act("read", i)
	}
	for i := range 100 {
		act("delete", i+100)
	}
	return e
}

func TestInterventions(t *testing.T) {
	tests := []struct {
		name          string
		mode          string
		wantEvent     string // context code recorded ("" none)
		wantDirective bool   // a directive issued by the optimizer
	}{
		{"off: nothing", interventionsOff, "", false},
		{"recommend: a planned intervention", interventionsRecommend, codeInterventionPlanned, false},
		{"auto: applied as a directive by the optimizer", interventionsAuto, codeInterventionApplied, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := driftingAgent(t)
			store := controlplane.NewMemoryStore()
			plane, err := controlplane.New(controlplane.DefaultConfig(), e, e, store)
			if err != nil {
				t.Fatal(err)
			}
			iv := &interventions{mode: tc.mode, engine: e, analyzer: trajectory.NewAnalyzer(trajectory.DefaultConfig(), true),
				plane: plane, events: store, log: slog.New(slog.NewTextHandler(io.Discard, nil)), last: map[string]trajectory.Intervention{}}
			hist, _ := e.DriftHistory("a")
			st, _ := e.Status("a")
			an := iv.analyzer.Analyze("a", hist, st.Thresholds, nil)
			if an.Recommendation.Intervention == trajectory.None {
				t.Fatalf("the drifting agent has no recommendation (risk %s, drift %.3f, velocity %.4f): the fixture no longer drifts",
					an.Trajectory.Risk, an.Trajectory.Current.Overall, an.Trajectory.Velocity.Overall)
			}
			ctx := context.Background()
			iv.check(ctx)
			iv.check(ctx) // unchanged recommendation: nothing more
			past, err := iv.Interventions(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantEvent == "" {
				if len(past) != 0 {
					t.Fatalf("got %d interventions, want none", len(past))
				}
				return
			}
			if len(past) != 1 || past[0].Type != an.Recommendation.Intervention || past[0].Applied != tc.wantDirective {
				t.Fatalf("interventions: got %+v, want one %s (applied %t)", past, an.Recommendation.Intervention, tc.wantDirective)
			}
			ds, _ := plane.List(ctx)
			var byOptimizer int
			for _, d := range ds {
				if d.Operator == actorOptimizer {
					byOptimizer++
				}
			}
			if got := byOptimizer > 0; got != tc.wantDirective {
				t.Errorf("directives by the optimizer: got %d, want some: %t", byOptimizer, tc.wantDirective)
			}
			evs, _ := plane.Events(ctx, controlplane.EventFilter{ContextCode: controlplane.CodeDirectiveIssued, Actor: actorOptimizer})
			if got := len(evs) > 0; got != tc.wantDirective {
				t.Errorf("CONTROL.DIRECTIVE_ISSUED by the optimizer: got %d events", len(evs))
			}
		})
	}
}

var _ admin.InterventionLog = (*interventions)(nil)
