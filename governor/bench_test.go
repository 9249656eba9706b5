package governor

import (
	"strconv"
	"sync/atomic"
	"testing"
)

// benchContract is a realistic contract: scope, boundaries, sensitive
// targets, one CEL authority expression, limits and an anchor.
func benchContract(id string) Contract {
	return Contract{AgentID: id, Archetype: "customer-experience", Team: "support",
		Scope: []string{"read", "create", "refund"}, Boundaries: []string{"api.example.com/*", "payments/*"},
		HumanOverride: []string{"delete"}, SensitiveTargets: []string{"payments/*"},
		Authority: []string{"!has(action.parameters.amount) || action.parameters.amount <= 500"},
		Limits:    Limits{MaxConcurrent: 10, MaxCostPerAction: 100},
		Anchors:   map[string]string{"refund": "return a customer's payment"}}
}

func benchEngine(b *testing.B, agents int) *Engine {
	b.Helper()
	e, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for i := range agents {
		if err := e.SetContract(benchContract("agent-" + strconv.Itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.SetRules([]Rule{{Name: "no-bulk-export", Expr: "action.type != 'export' || action.parameters.rows <= 1000", Message: "bulk export needs a human"}}); err != nil {
		b.Fatal(err)
	}
	return e
}

var benchAction = Action{Type: "read", Target: "api.example.com/customers/42", Parameters: map[string]any{"fields": "name"}, Source: "proxy"}

// BenchmarkEvaluate: one agent, an in-scope action, the full trace, state
// updated (fingerprint, drift every 10 observations, trust).
func BenchmarkEvaluate(b *testing.B) {
	e := benchEngine(b, 1)
	req := Request{AgentID: "agent-0", Action: benchAction}
	b.ReportAllocs()
	for b.Loop() {
		d, err := e.Evaluate(req)
		if err != nil || d.Verdict != Allow {
			b.Fatalf("got %v, %v; want ALLOW", d, err)
		}
	}
}

// BenchmarkEvaluateDryRun: the playground path (no state change).
func BenchmarkEvaluateDryRun(b *testing.B) {
	e := benchEngine(b, 1)
	req := Request{AgentID: "agent-0", Action: benchAction, DryRun: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluateParallel: 1,000 agents evaluated from GOMAXPROCS
// goroutines. Compare ns/op at -cpu 1 and -cpu 2 for the scaling.
func BenchmarkEvaluateParallel(b *testing.B) {
	const agents = 1000
	e := benchEngine(b, agents)
	ids := make([]string, agents)
	for i := range ids {
		ids[i] = "agent-" + strconv.Itoa(i)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919))
		for pb.Next() {
			i++
			if _, err := e.Evaluate(Request{AgentID: ids[i%agents], Action: benchAction}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEvaluateWithOverlays: BenchmarkEvaluate with 100 agents' overlays
// installed, one bound to the evaluated agent. The overlays change nothing in
// the decision (factor 1, no invariant), so the difference from
// BenchmarkEvaluate is the cost of reading them.
func BenchmarkEvaluateWithOverlays(b *testing.B) {
	e := benchEngine(b, 100)
	ov := Overlays{}
	for i := range 100 {
		ov["agent-"+strconv.Itoa(i)] = &Overlay{ThresholdFactor: 1, Directives: []string{"dir_" + strconv.Itoa(i)}}
	}
	e.SetOverlays(ov)
	req := Request{AgentID: "agent-0", Action: benchAction}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOverlayCost is the A/B for "directives cost nothing on the hot
// path": the same engine of 100 agents, evaluating one of them, without
// overlays and with 100 agents' behaviour-neutral overlays installed (one
// bound to the evaluated agent). Run the two alternately and compare.
func BenchmarkOverlayCost(b *testing.B) {
	for _, withOverlays := range []bool{false, true} {
		name := "none"
		if withOverlays {
			name = "100-directives"
		}
		b.Run(name, func(b *testing.B) {
			e := benchEngine(b, 100)
			if withOverlays {
				ov := Overlays{}
				for i := range 100 {
					ov["agent-"+strconv.Itoa(i)] = &Overlay{ThresholdFactor: 1, Directives: []string{"dir_" + strconv.Itoa(i)}}
				}
				e.SetOverlays(ov)
			}
			req := Request{AgentID: "agent-0", Action: benchAction}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Evaluate(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
