package governor

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// wantScore checks one dimension's score and veto flag, and that a veto is
// listed among the decision's vetoes.
func wantScore(t *testing.T, d *Decision, dim string, want float64, veto bool) {
	t.Helper()
	s := scoreOf(t, d, dim)
	if !approx(s.Score, want) {
		t.Errorf("%s: got score %v, want %v (%s)", dim, s.Score, want, s.Reasoning)
	}
	if s.Veto != veto {
		t.Errorf("%s: got veto %v, want %v (%s)", dim, s.Veto, veto, s.Reasoning)
	}
	if got := slices.Contains(d.Vetoes, dim); got != veto {
		t.Errorf("%s: got listed in vetoes %v (%v), want %v", dim, got, d.Vetoes, veto)
	}
}

func TestDimensionWeights(t *testing.T) {
	want := map[string]float64{
		DimScopeCompliance: 1.5, DimAuthorityVerification: 1.5, DimResourceBoundaries: 1.2,
		DimBehavioralConsistency: 1.0, DimCascadingImpact: 1.3, DimStakeholderImpact: 1.2,
		DimIncidentDetection: 1.5, DimIsolationIntegrity: 1.4, DimTemporalCompliance: 0.8,
		DimPrecedentAlignment: 0.7, DimTransparency: 0.6, DimHumanOverride: 2.0, DimEthicalAlignment: 2.0,
	}
	canVeto := map[string]bool{
		DimScopeCompliance: true, DimAuthorityVerification: true, DimResourceBoundaries: true,
		DimIncidentDetection: true, DimIsolationIntegrity: true, DimTemporalCompliance: true,
		DimHumanOverride: true, DimEthicalAlignment: true,
	}
	if got := len(Dimensions()); got != 13 {
		t.Fatalf("got %d dimensions, want 13", got)
	}
	var sum float64
	for i, spec := range dimensionOrder {
		if Dimensions()[i] != spec.name {
			t.Errorf("Dimensions()[%d]: got %s, want %s", i, Dimensions()[i], spec.name)
		}
		if spec.weight != want[spec.name] {
			t.Errorf("%s: got weight %v, want %v", spec.name, spec.weight, want[spec.name])
		}
		if spec.canVeto != canVeto[spec.name] {
			t.Errorf("%s: got canVeto %v, want %v", spec.name, spec.canVeto, canVeto[spec.name])
		}
		sum += spec.weight
	}
	if !approx(sum, 16.7) {
		t.Errorf("got weight sum %v, want 16.7", sum)
	}
}

func TestScopeCompliance(t *testing.T) {
	cases := []struct {
		name  string
		scope []string
		typ   string
		want  float64
		veto  bool
	}{
		{"no scope configured", nil, "read", 0.5, false},
		{"type in scope", []string{"read", "write"}, "write", 1, false},
		{"wildcard scope", []string{"*"}, "launch_rocket", 1, false},
		{"type out of scope vetoes", []string{"read"}, "delete", 0, true},
		{"scope is case sensitive", []string{"read"}, "READ", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a", Scope: tc.scope})
			d := dryAct(t, e, "a", Action{Type: tc.typ, Target: "docs/x", Parameters: map[string]any{"k": 1}})
			wantScore(t, d, DimScopeCompliance, tc.want, tc.veto)
			if tc.veto && d.Verdict != Deny {
				t.Errorf("got verdict %s, want DENY", d.Verdict)
			}
		})
	}
}

func TestAuthorityVerification(t *testing.T) {
	cases := []struct {
		name      string
		authority []string
		params    map[string]any
		want      float64
		veto      bool
		reasonHas string
	}{
		{"no authority expressions", nil, map[string]any{"amount": 50.0}, 0.7, false, "no authority"},
		{"all expressions true", []string{`action.type == "write"`, `action.parameters.amount < 100.0`}, map[string]any{"amount": 50.0}, 1, false, "all authority"},
		{"second expression false", []string{`action.type == "write"`, `action.parameters.amount < 100.0`}, map[string]any{"amount": 500.0}, 0, true, `action.parameters.amount < 100.0`},
		{"first false expression is reported", []string{`action.type == "read"`, `action.parameters.amount < 100.0`}, map[string]any{"amount": 500.0}, 0, true, `action.type == \"read\"`},
		{"evaluation error fails closed", []string{`action.parameters.amount < 100.0`}, map[string]any{"other": 1.0}, 0, true, "evaluation error"},
		{"non-bool result fails closed", []string{`action.parameters.flag`}, map[string]any{"flag": "yes"}, 0, true, "not a bool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a", Authority: tc.authority})
			d := dryAct(t, e, "a", Action{Type: "write", Target: "ledger/x", Parameters: tc.params})
			wantScore(t, d, DimAuthorityVerification, tc.want, tc.veto)
			if r := scoreOf(t, d, DimAuthorityVerification).Reasoning; !strings.Contains(r, tc.reasonHas) {
				t.Errorf("got reasoning %q, want it to contain %q", r, tc.reasonHas)
			}
		})
	}
}

// allowN evaluates n permitted actions of agent id, one second apart,
// alternating types so that no incident pattern forms.
func allowN(t *testing.T, e *Engine, clk *fakeClock, id string, n int) {
	t.Helper()
	for i := range n {
		act := readAct()
		if i%2 == 1 {
			act.Type = "list"
		}
		if d := evalAct(t, e, id, act); d.Verdict != Allow {
			t.Fatalf("setup action %d: got %s, want ALLOW (%s)", i, d.Verdict, d.Reasoning)
		}
		clk.Advance(time.Second)
	}
}

func TestResourceBoundaries(t *testing.T) {
	cases := []struct {
		name    string
		limits  Limits
		allowed int           // permitted actions before the one scored
		wait    time.Duration // after them
		started int           // calls in flight
		params  map[string]any
		want    float64
		veto    bool
	}{
		{"no limits", Limits{}, 0, 0, 0, nil, 1, false},
		{"rate ratio one quarter", Limits{ActionsPerMinute: 4}, 1, 0, 0, nil, 0.875, false},
		{"rate ratio one half", Limits{ActionsPerMinute: 4}, 2, 0, 0, nil, 0.75, false},
		{"rate at the limit vetoes", Limits{ActionsPerMinute: 2}, 2, 0, 0, nil, 0, true},
		{"rate window is the last 60 s", Limits{ActionsPerMinute: 2}, 2, 61 * time.Second, 0, nil, 1, false},
		{"concurrency ratio one half", Limits{MaxConcurrent: 2}, 0, 0, 1, nil, 0.75, false},
		{"concurrency at the limit vetoes", Limits{MaxConcurrent: 2}, 0, 0, 2, nil, 0, true},
		{"ratio is the larger of rate and concurrency", Limits{ActionsPerMinute: 4, MaxConcurrent: 2}, 1, 0, 1, nil, 0.75, false},
		{"ratio uses rate when larger", Limits{ActionsPerMinute: 4, MaxConcurrent: 4}, 3, 0, 1, nil, 0.625, false},
		{"cost over the maximum vetoes", Limits{MaxCostPerAction: 100}, 0, 0, 0, map[string]any{"cost": 150.0}, 0, true},
		{"cost at the maximum passes", Limits{MaxCostPerAction: 100}, 0, 0, 0, map[string]any{"cost": 100.0}, 1, false},
		{"integer cost over the maximum vetoes", Limits{MaxCostPerAction: 100}, 0, 0, 0, map[string]any{"cost": 101}, 0, true},
		{"json number cost over the maximum vetoes", Limits{MaxCostPerAction: 100}, 0, 0, 0, map[string]any{"cost": json.Number("100.5")}, 0, true},
		{"non-numeric cost is ignored", Limits{MaxCostPerAction: 100}, 0, 0, 0, map[string]any{"cost": "lots"}, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Limits: tc.limits})
			allowN(t, e, clk, "a", tc.allowed)
			clk.Advance(tc.wait)
			for range tc.started {
				if err := e.CallStarted("a"); err != nil {
					t.Fatal(err)
				}
			}
			d := dryAct(t, e, "a", Action{Type: "query", Target: "db/x", Parameters: tc.params})
			wantScore(t, d, DimResourceBoundaries, tc.want, tc.veto)
		})
	}
}

func TestResourceConcurrencyReleasedByCallFinished(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a", Limits: Limits{MaxConcurrent: 1}})
	if err := e.CallStarted("a"); err != nil {
		t.Fatal(err)
	}
	wantScore(t, dryAct(t, e, "a", readAct()), DimResourceBoundaries, 0, true)
	if err := e.CallFinished("a", CallCompleted); err != nil {
		t.Fatal(err)
	}
	wantScore(t, dryAct(t, e, "a", readAct()), DimResourceBoundaries, 1, false)
	if got := mustStatus(t, e, "a").InFlight; got != 0 {
		t.Errorf("got in flight %d, want 0", got)
	}
}

func TestResourceRateCountsOnlyPermittedActions(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a", Scope: []string{"read"}, Limits: Limits{ActionsPerMinute: 2}})
	for range 3 {
		if d := evalAct(t, e, "a", Action{Type: "delete", Target: "x"}); d.Verdict != Deny {
			t.Fatalf("got %s, want DENY", d.Verdict)
		}
	}
	wantScore(t, dryAct(t, e, "a", readAct()), DimResourceBoundaries, 1, false)
}

func TestBehavioralConsistency(t *testing.T) {
	type step struct {
		typ string
		n   int
	}
	cases := []struct {
		name      string
		archetype string
		history   []step
		typ       string
		want      float64
	}{
		{"first action", "", nil, "read", 0.7},
		{"fewer than 10: known type", "", []step{{"read", 3}}, "read", 1},
		{"fewer than 10: novel type", "", []step{{"read", 3}}, "write", 0.5},
		{"fewer than 10: type known from the prior", "data-processing", []step{{"read", 1}}, "delete", 1},
		{"fewer than 10: type unknown to the prior", "data-processing", []step{{"read", 1}}, "launch", 0.5},
		{"10 or more: share of at least 0.05", "", []step{{"write", 1}, {"read", 19}}, "write", 1},
		{"10 or more: share below 0.05", "", []step{{"write", 1}, {"read", 20}}, "write", 0.7},
		{"10 or more: small share from the prior", "data-processing", []step{{"read", 10}}, "delete", 0.7},
		{"10 or more: absent type", "", []step{{"read", 10}}, "archive", 0.4},
		{"10 or more: common type", "", []step{{"read", 10}}, "read", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Archetype: tc.archetype})
			for _, s := range tc.history {
				for range s.n {
					clk.Advance(10 * time.Second)
					evalAct(t, e, "a", Action{Type: s.typ, Target: "data/x", Parameters: map[string]any{"k": 1}})
				}
			}
			clk.Advance(10 * time.Second)
			d := dryAct(t, e, "a", Action{Type: tc.typ, Target: "data/x", Parameters: map[string]any{"k": 1}})
			wantScore(t, d, DimBehavioralConsistency, tc.want, false)
		})
	}
}

func TestBehavioralDriftMultiplier(t *testing.T) {
	cases := []struct {
		name       string
		confidence float64
		overall    float64
		want       float64
	}{
		{"no drift", 0, 0, 0.7},
		{"confidence at 0.3 does not reduce", 0.3, 0.5, 0.7},
		{"overall below 0.15 does not reduce", 0.9, 0.149, 0.7},
		{"overall at 0.15 reduces", 0.31, 0.15, 0.7 * 0.91},
		{"overall 0.5 reduces by 0.3", 0.9, 0.5, 0.7 * 0.7},
		{"overall 1 reduces by 0.6", 0.9, 1, 0.7 * 0.4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a"})
			withState(t, e, "a", func(st *agentState) {
				st.DriftConfidence, st.Drift.Overall = tc.confidence, tc.overall
			})
			wantScore(t, dryAct(t, e, "a", readAct()), DimBehavioralConsistency, tc.want, false)
		})
	}
}

func TestCascadingImpact(t *testing.T) {
	cases := []struct {
		name string
		typ  string
		rev  Reversibility
		want float64
	}{
		{"delete", "delete_record", 0, 0.3},
		{"deploy", "deploy", 0, 0.3},
		{"publish", "publish_post", 0, 0.3},
		{"broadcast", "broadcast", 0, 0.3},
		{"transfer", "transfer_funds", 0, 0.3},
		{"upper case type", "DELETE_ALL", 0, 0.3},
		{"update", "update_record", 0, 0.6},
		{"modify", "modify", 0, 0.6},
		{"write", "write_file", 0, 0.6},
		{"create", "create_ticket", 0, 0.6},
		{"send is irreversible: capped at 0.3", "send_email", 0, 0.3},
		{"read", "read_file", 0, 0.9},
		{"other compensable", "archive", 0, 0.9},
		{"declared irreversible read capped", "read_file", Irreversible, 0.3},
		{"declared irreversible write capped", "write_file", Irreversible, 0.3},
		{"declared compensable delete keeps 0.3", "delete_cache", Compensable, 0.3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a"})
			d := dryAct(t, e, "a", Action{Type: tc.typ, Target: "x/y", Parameters: map[string]any{"k": 1}, Reversibility: tc.rev})
			wantScore(t, d, DimCascadingImpact, tc.want, false)
		})
	}
}

func TestStakeholderImpact(t *testing.T) {
	cases := []struct {
		name   string
		target string
		want   float64
	}{
		{"sensitive pattern", "db/payroll/2024", 0.2},
		{"sensitive pattern wins over words", "db/payroll/users", 0.2},
		{"customer word, any case", "crm/Customer/42", 0.4},
		{"user word", "svc/users", 0.4},
		{"external word", "external-api", 0.4},
		{"public word", "public_site", 0.4},
		{"client word", "client-portal", 0.4},
		{"internal target", "internal/metrics", 0.9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a", SensitiveTargets: []string{"db/payroll/*"}})
			wantScore(t, dryAct(t, e, "a", Action{Type: "read", Target: tc.target}), DimStakeholderImpact, tc.want, false)
		})
	}
}

func TestIncidentDetection(t *testing.T) {
	cases := []struct {
		name       string
		recent     []string
		confidence float64
		overall    float64
		want       float64
		veto       bool
	}{
		{"no history", nil, 0, 0, 1, false},
		{"four of the type in history", []string{"read", "read", "read", "read"}, 0, 0, 1, false},
		{"last five all of the type", []string{"read", "read", "read", "read", "read"}, 0, 0, 0.2, false},
		{"last five all of the type among more", []string{"write", "read", "read", "read", "read", "read"}, 0, 0, 0.2, false},
		{"last five not all of the type", []string{"read", "read", "read", "read", "write"}, 0, 0, 1, false},
		{"older repetition does not count", []string{"read", "read", "read", "read", "read", "write"}, 0, 0, 1, false},
		{"drift 0.6 vetoes", nil, 0.6, 0.6, 0.1, true},
		{"drift 0.4 scores 0.3", nil, 0.6, 0.4, 0.3, false},
		{"drift 0.39", nil, 0.9, 0.39, 1, false},
		{"drift needs confidence above 0.5", nil, 0.5, 0.9, 1, false},
		{"repetition with drift 0.45 keeps the lower 0.2", []string{"read", "read", "read", "read", "read"}, 0.9, 0.45, 0.2, false},
		{"repetition with drift 0.65 vetoes", []string{"read", "read", "read", "read", "read"}, 0.9, 0.65, 0.1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a"})
			withState(t, e, "a", func(st *agentState) {
				for _, r := range tc.recent {
					st.Recent.push(r)
				}
				st.DriftConfidence, st.Drift.Overall = tc.confidence, tc.overall
			})
			wantScore(t, dryAct(t, e, "a", readAct()), DimIncidentDetection, tc.want, tc.veto)
		})
	}
}

func TestIncidentDetectionFromOwnHistory(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a"})
	for i := range 5 {
		d := dryAct(t, e, "a", readAct())
		if got := scoreOf(t, d, DimIncidentDetection).Score; got != 1 {
			t.Fatalf("after %d reads: got %v, want 1", i, got)
		}
		evalAct(t, e, "a", readAct())
		clk.Advance(time.Second)
	}
	wantScore(t, dryAct(t, e, "a", readAct()), DimIncidentDetection, 0.2, false)
	wantScore(t, dryAct(t, e, "a", Action{Type: "list", Target: "docs"}), DimIncidentDetection, 1, false)
}

func TestIsolationIntegrity(t *testing.T) {
	cases := []struct {
		name       string
		boundaries []string
		target     string
		want       float64
		veto       bool
	}{
		{"no boundaries", nil, "anywhere/at/all", 0.6, false},
		{"target within a boundary", []string{"internal/*", "api.example.com/*"}, "api.example.com/v1/users", 1, false},
		{"wildcard boundary", []string{"*"}, "anywhere", 1, false},
		{"target outside every boundary", []string{"api.example.com/*"}, "evil.example.net/x", 0, true},
		{"look-alike host is outside", []string{"api.example.com/*"}, "api.example.com.evil.net/x", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a", Boundaries: tc.boundaries})
			wantScore(t, dryAct(t, e, "a", Action{Type: "read", Target: tc.target}), DimIsolationIntegrity, tc.want, tc.veto)
		})
	}
}

func TestTemporalCompliance(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2025, time.January, 15, h, m, 0, 0, time.UTC) }
	windows := map[string]TimeWindow{
		"deploy_app": {StartHour: 9, EndHour: 17},
		"backup":     {StartHour: 22, EndHour: 6},
		"report":     {StartHour: 9, EndHour: 17, Timezone: "America/New_York"},
		"audit":      {StartHour: 5, EndHour: 5},
	}
	cases := []struct {
		name string
		typ  string
		now  time.Time
		want float64
		veto bool
	}{
		{"no window for the type", "read", at(3, 0), 1, false},
		{"inside the window", "deploy_app", at(12, 0), 1, false},
		{"start hour is inclusive", "deploy_app", at(9, 0), 1, false},
		{"end hour is exclusive", "deploy_app", at(17, 0), 0, true},
		{"outside the window", "deploy_app", at(20, 30), 0, true},
		{"wrap-around: late evening inside", "backup", at(23, 0), 1, false},
		{"wrap-around: early morning inside", "backup", at(3, 0), 1, false},
		{"wrap-around: midday outside", "backup", at(12, 0), 0, true},
		{"wrap-around: end hour exclusive", "backup", at(6, 0), 0, true},
		{"time zone: 12:00 UTC is 07:00 in New York", "report", at(12, 0), 0, true},
		{"time zone: 15:00 UTC is 10:00 in New York", "report", at(15, 0), 1, false},
		{"equal start and end hours: all day", "audit", at(3, 0), 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", TimeWindows: windows})
			clk.Set(tc.now)
			wantScore(t, dryAct(t, e, "a", Action{Type: tc.typ, Target: "x", Parameters: map[string]any{"k": 1}}), DimTemporalCompliance, tc.want, tc.veto)
		})
	}
}

func TestTemporalMinInterval(t *testing.T) {
	cases := []struct {
		name  string
		after time.Duration
		want  float64
		veto  bool
	}{
		{"within the minimum interval", 100 * time.Second, 0.1, true},
		{"just before the minimum interval", 299 * time.Second, 0.1, true},
		{"at the minimum interval", 300 * time.Second, 1, false},
		{"after the minimum interval", 301 * time.Second, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", TimeWindows: map[string]TimeWindow{"sync": {StartHour: 0, EndHour: 24, MinIntervalSeconds: 300}}})
			act := Action{Type: "sync", Target: "x", Parameters: map[string]any{"k": 1}}
			if d := evalAct(t, e, "a", act); d.Verdict != Allow {
				t.Fatalf("first sync: got %s, want ALLOW", d.Verdict)
			}
			wantScore(t, dryAct(t, e, "a", Action{Type: "other", Target: "x"}), DimTemporalCompliance, 1, false)
			clk.Advance(tc.after)
			wantScore(t, dryAct(t, e, "a", act), DimTemporalCompliance, tc.want, tc.veto)
		})
	}
}

func TestPrecedentAlignment(t *testing.T) {
	// write is denied when parameters.ok is not true (authority).
	contract := Contract{AgentID: "a", Scope: []string{"read", "write", "list"}, Authority: []string{`action.type != "write" || action.parameters.ok == true`}}
	write := func(ok bool) Action {
		return Action{Type: "write", Target: "docs/x", Parameters: map[string]any{"ok": ok, "n": 1}}
	}
	cases := []struct {
		name    string
		history []Action
		act     Action
		want    float64
	}{
		{"no history", nil, readAct(), 0.8},
		{"no action of this type", []Action{readAct()}, write(true), 0.7},
		{"this type allowed before", []Action{readAct(), readAct()}, readAct(), 0.9},
		{"one of one denied", []Action{write(false)}, write(true), 0.3},
		{"exactly half denied is not a majority", []Action{write(false), write(true)}, write(true), 0.9},
		{"two of three denied", []Action{write(false), write(true), write(false)}, write(true), 0.3},
		{"denials of another type do not count", []Action{{Type: "delete", Target: "x"}}, readAct(), 0.7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, contract)
			for _, h := range tc.history {
				evalAct(t, e, "a", h)
				clk.Advance(time.Second)
			}
			wantScore(t, dryAct(t, e, "a", tc.act), DimPrecedentAlignment, tc.want, false)
		})
	}
}

// transparencyOf scores transparency alone for an action of agentID (an
// empty agent id cannot reach Evaluate: contracts require one).
func transparencyOf(agentID string, act Action) float64 {
	ev := &evaluation{act: &act, d: &Decision{AgentID: agentID, Scores: make([]DimensionScore, numDims)}}
	ev.transparency()
	return ev.d.Scores[dimTransparency].Score
}

func TestTransparency(t *testing.T) {
	p := map[string]any{"k": 1}
	cases := []struct {
		name  string
		agent string
		act   Action
		want  float64
	}{
		{"fully described", "a", Action{Type: "write", Target: "x", Parameters: p}, 1},
		{"read type without parameters", "a", Action{Type: "read", Target: "x"}, 1},
		{"list type without parameters", "a", Action{Type: "list_files", Target: "x"}, 1},
		{"non-read type without parameters", "a", Action{Type: "write", Target: "x"}, 0.9},
		{"no type", "a", Action{Target: "x", Parameters: p}, 0.7},
		{"no type and no parameters", "a", Action{Target: "x"}, 0.6},
		{"no target", "a", Action{Type: "write", Parameters: p}, 0.8},
		{"no agent", "", Action{Type: "write", Target: "x", Parameters: p}, 0.8},
		{"nothing at all", "", Action{}, 0.2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := transparencyOf(tc.agent, tc.act); !approx(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("through the engine", func(t *testing.T) {
		e, _ := engineWith(t, Contract{AgentID: "a"})
		wantScore(t, dryAct(t, e, "a", Action{Target: "x"}), DimTransparency, 0.6, false)
		wantScore(t, dryAct(t, e, "a", Action{Type: "write", Target: "x"}), DimTransparency, 0.9, false)
	})
}

func TestHumanOverride(t *testing.T) {
	exportAct := Action{Type: "export_report", Target: "reports/q1", Parameters: map[string]any{"format": "pdf"}}
	cases := []struct {
		name    string
		listed  bool
		trust   float64
		approve func(e *Engine, now time.Time)
		act     Action
		want    float64
		veto    bool
	}{
		{"no review required", false, 0.5, nil, exportAct, 1, false},
		{"listed type vetoes", true, 0.5, nil, exportAct, 0, true},
		{"approval bound to the action", true, 0.5, func(e *Engine, now time.Time) {
			_ = e.GrantApproval("a", ActionDigest("a", &exportAct), now.Add(time.Hour))
		}, exportAct, 1, false},
		{"approval of other parameters does not apply", true, 0.5, func(e *Engine, now time.Time) {
			other := exportAct
			other.Parameters = map[string]any{"format": "csv"}
			_ = e.GrantApproval("a", ActionDigest("a", &other), now.Add(time.Hour))
		}, exportAct, 0, true},
		{"approval of another agent does not apply", true, 0.5, func(e *Engine, now time.Time) {
			_ = e.GrantApproval("a", ActionDigest("b", &exportAct), now.Add(time.Hour))
		}, exportAct, 0, true},
		{"expired approval is ignored", true, 0.5, func(e *Engine, now time.Time) {
			_ = e.GrantApproval("a", ActionDigest("a", &exportAct), now.Add(-time.Second))
		}, exportAct, 0, true},
		{"approval expiring now is ignored", true, 0.5, func(e *Engine, now time.Time) {
			_ = e.GrantApproval("a", ActionDigest("a", &exportAct), now)
		}, exportAct, 0, true},
		{"trust below 0.3 vetoes", false, 0.29, nil, exportAct, 0, true},
		{"trust at 0.3 does not veto", false, 0.3, nil, exportAct, 1, false},
		{"approval passes trust below 0.3", false, 0.2, func(e *Engine, now time.Time) {
			_ = e.GrantApproval("a", ActionDigest("a", &exportAct), now.Add(time.Hour))
		}, exportAct, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Contract{AgentID: "a"}
			if tc.listed {
				c.HumanOverride = []string{"export_report"}
			}
			e, clk := engineWith(t, c)
			withState(t, e, "a", func(st *agentState) { st.Trust = tc.trust })
			if tc.approve != nil {
				tc.approve(e, clk.Now())
			}
			d := dryAct(t, e, "a", tc.act)
			wantScore(t, d, DimHumanOverride, tc.want, tc.veto)
			if tc.veto && (d.Verdict != Escalate || d.Tier != 1) {
				t.Errorf("got %s at tier %d, want ESCALATE at tier 1", d.Verdict, d.Tier)
			}
		})
	}
}

func TestHumanOverrideApprovalUsedUpOnce(t *testing.T) {
	act := Action{Type: "export_report", Target: "reports/q1", Parameters: map[string]any{"format": "pdf"}}
	e, clk := engineWith(t, Contract{AgentID: "a", HumanOverride: []string{"export_report"}})
	if err := e.GrantApproval("a", ActionDigest("a", &act), clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	first := evalAct(t, e, "a", act)
	wantScore(t, first, DimHumanOverride, 1, false)
	if first.Verdict != Allow {
		t.Errorf("approved action: got %s, want ALLOW (%s)", first.Verdict, first.Reasoning)
	}
	clk.Advance(time.Second)
	second := evalAct(t, e, "a", act)
	wantScore(t, second, DimHumanOverride, 0, true)
	if second.Verdict != Escalate {
		t.Errorf("second identical action: got %s, want ESCALATE", second.Verdict)
	}
	if err := e.GrantApproval("nobody", "x", clk.Now()); err == nil {
		t.Errorf("GrantApproval for an unknown agent: got nil error, want ErrUnknownAgent")
	}
}

func TestEthicalAlignment(t *testing.T) {
	holds := Rule{Name: "has_target", Expr: `action.target != ""`, Message: "every action names its target"}
	noProd := Rule{Name: "no_prod_delete", Expr: `!(action.type == "delete" && action.target.startsWith("prod/"))`, Message: "never delete in production"}
	noDelete := Rule{Name: "no_delete", Expr: `action.type != "delete"`, Message: "never delete"}
	needsKey := Rule{Name: "needs_key", Expr: `action.parameters.key == "k"`}
	cases := []struct {
		name      string
		rules     []Rule
		act       Action
		want      float64
		veto      bool
		reasonHas []string
		reasonNot string
	}{
		{"no constitutional rules", nil, Action{Type: "delete", Target: "prod/db"}, 0.8, false, []string{"no constitutional rules"}, ""},
		{"all rules hold", []Rule{holds, noProd}, Action{Type: "delete", Target: "dev/db"}, 1, false, []string{"all constitutional rules hold"}, ""},
		{"first failing rule with its message", []Rule{holds, noProd, noDelete}, Action{Type: "delete", Target: "prod/db"}, 0, true, []string{"no_prod_delete", "never delete in production"}, "no_delete:"},
		{"evaluation error fails closed", []Rule{needsKey}, Action{Type: "read", Target: "x"}, 0, true, []string{"needs_key", "evaluation error"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a"})
			if err := e.SetRules(tc.rules); err != nil {
				t.Fatal(err)
			}
			d := dryAct(t, e, "a", tc.act)
			wantScore(t, d, DimEthicalAlignment, tc.want, tc.veto)
			r := scoreOf(t, d, DimEthicalAlignment).Reasoning
			for _, w := range tc.reasonHas {
				if !strings.Contains(r, w) {
					t.Errorf("got reasoning %q, want it to contain %q", r, w)
				}
			}
			if tc.reasonNot != "" && strings.Contains(r, tc.reasonNot) {
				t.Errorf("got reasoning %q, want it not to contain %q", r, tc.reasonNot)
			}
			if tc.veto && d.Verdict != Deny {
				t.Errorf("got %s, want DENY", d.Verdict)
			}
		})
	}
}

func TestAllScoresHaveFullConfidence(t *testing.T) {
	e, _ := engineWith(t, Contract{AgentID: "a"})
	d := dryAct(t, e, "a", readAct())
	if len(d.Scores) != 13 {
		t.Fatalf("got %d scores, want 13", len(d.Scores))
	}
	for i, s := range d.Scores {
		if s.Dimension != dimensionOrder[i].name {
			t.Errorf("score %d: got %s, want %s", i, s.Dimension, dimensionOrder[i].name)
		}
		if s.Confidence != 1 {
			t.Errorf("%s: got confidence %v, want 1", s.Dimension, s.Confidence)
		}
		if s.Score < 0 || s.Score > 1 {
			t.Errorf("%s: got score %v, want within [0, 1]", s.Dimension, s.Score)
		}
	}
}

func TestRevokeApprovalWithdrawsTheGrant(t *testing.T) {
	act := Action{Type: "export_report", Target: "reports/q1"}
	e, clk := engineWith(t, Contract{AgentID: "a", HumanOverride: []string{"export_report"}})
	dg := ActionDigest("a", &act)
	if err := e.GrantApproval("a", dg, clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		got, err := e.RevokeApproval("a", dg)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("revoke #%d: got %t, want %t", i+1, got, want)
		}
	}
	if d := evalAct(t, e, "a", act); d.Verdict != Escalate {
		t.Errorf("after revoke: got %s, want ESCALATE", d.Verdict)
	}
	if _, err := e.RevokeApproval("nobody", dg); !errors.Is(err, ErrUnknownAgent) {
		t.Errorf("unknown agent: got %v, want ErrUnknownAgent", err)
	}
}

func TestCallOutcomesFeedTrust(t *testing.T) {
	tests := []struct {
		name    string
		outcome CallOutcome
		delta   float64
	}{
		{"completed raises trust", CallCompleted, 0.005},
		{"interrupted lowers trust", CallInterrupted, -0.03},
		{"failed leaves trust", CallFailed, 0},
		{"abandoned leaves trust", CallAbandoned, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a"})
			before := mustStatus(t, e, "a").Trust
			if err := e.CallStarted("a"); err != nil {
				t.Fatal(err)
			}
			if err := e.CallFinished("a", tc.outcome); err != nil {
				t.Fatal(err)
			}
			st := mustStatus(t, e, "a")
			if got := st.Trust - before; math.Abs(got-tc.delta) > 1e-9 {
				t.Errorf("got trust change %.4f, want %.4f", got, tc.delta)
			}
			if st.InFlight != 0 {
				t.Errorf("got in flight %d, want 0", st.InFlight)
			}
			want := int64(0)
			if tc.outcome == CallFailed {
				want = 1
			}
			if st.UpstreamFailures != want {
				t.Errorf("got %d upstream failures, want %d", st.UpstreamFailures, want)
			}
		})
	}
}
