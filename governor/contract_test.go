package governor

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestContractCompileErrors(t *testing.T) {
	cases := []struct {
		name      string
		contract  Contract
		wantField string
		msgHas    string
	}{
		{"missing agent id", Contract{AgentID: " "}, "id", "required"},
		{"bad CEL in authority[1]", Contract{AgentID: "a", Authority: []string{"true", "action.type =="}}, "authority[1]", "invalid CEL"},
		{"non-bool CEL", Contract{AgentID: "a", Authority: []string{"1 + 2"}}, "authority[0]", "want bool"},
		{"bad boundary glob", Contract{AgentID: "a", Boundaries: []string{"ok/*", "bad[/x"}}, "boundaries[1]", "bad glob"},
		{"bad sensitive glob", Contract{AgentID: "a", SensitiveTargets: []string{"db/["}}, "sensitive_targets[0]", "bad glob"},
		{"empty scope entry", Contract{AgentID: "a", Scope: []string{"read", ""}}, "scope[1]", "empty"},
		{"start hour out of range", Contract{AgentID: "a", TimeWindows: map[string]TimeWindow{"deploy": {StartHour: 24, EndHour: 5}}}, "time_windows.deploy.start_hour", "0..23"},
		{"negative start hour", Contract{AgentID: "a", TimeWindows: map[string]TimeWindow{"deploy": {StartHour: -1, EndHour: 5}}}, "time_windows.deploy.start_hour", "0..23"},
		{"end hour out of range", Contract{AgentID: "a", TimeWindows: map[string]TimeWindow{"deploy": {StartHour: 9, EndHour: 25}}}, "time_windows.deploy.end_hour", "0..24"},
		{"negative min interval", Contract{AgentID: "a", TimeWindows: map[string]TimeWindow{"sync": {StartHour: 0, EndHour: 24, MinIntervalSeconds: -1}}}, "time_windows.sync.min_interval_seconds", "negative"},
		{"unknown time zone", Contract{AgentID: "a", TimeWindows: map[string]TimeWindow{"deploy": {StartHour: 9, EndHour: 17, Timezone: "Mars/Olympus"}}}, "time_windows.deploy.timezone", "Mars/Olympus"},
		{"unknown archetype with a suggestion", Contract{AgentID: "a", Archetype: "finacial-analyst"}, "archetype", `"financial-analyst"`},
		{"unknown archetype, another suggestion", Contract{AgentID: "a", Archetype: "Data-Processing"}, "archetype", `"data-processing"`},
		{"negative rate limit", Contract{AgentID: "a", Limits: Limits{ActionsPerMinute: -1}}, "limits.actions_per_minute", "negative"},
		{"negative concurrency", Contract{AgentID: "a", Limits: Limits{MaxConcurrent: -1}}, "limits.max_concurrent", "negative"},
		{"negative cost", Contract{AgentID: "a", Limits: Limits{MaxCostPerAction: -0.5}}, "limits.max_cost_per_action", "negative"},
		{"empty anchor term", Contract{AgentID: "a", Anchors: map[string]string{"  ": "x"}}, "anchors", "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.contract.Validate()
			if err == nil {
				t.Fatalf("got nil error, want one naming %s", tc.wantField)
			}
			fe := fieldErr(t, err)
			if fe.Field != tc.wantField {
				t.Errorf("got field %q, want %q (%v)", fe.Field, tc.wantField, err)
			}
			if !strings.Contains(fe.Msg, tc.msgHas) {
				t.Errorf("got message %q, want it to contain %q", fe.Msg, tc.msgHas)
			}
			e, _ := newTestEngine(t)
			if err := e.SetContract(tc.contract); err == nil {
				t.Errorf("SetContract: got nil error, want one")
			}
			if len(e.Agents()) != 0 {
				t.Errorf("got agents %v after a refused contract, want none", e.Agents())
			}
		})
	}
}

func TestContractValid(t *testing.T) {
	c := Contract{
		AgentID: "a", Archetype: "financial-transactions", Scope: []string{"read", "*"},
		Boundaries: []string{"api.example.com/*"}, HumanOverride: []string{"transfer"},
		SensitiveTargets: []string{"db/payroll/*"}, Authority: []string{`action.parameters.amount < 100.0`},
		TimeWindows: map[string]TimeWindow{"deploy": {StartHour: 22, EndHour: 6, Timezone: "Europe/Paris"}, "all": {StartHour: 0, EndHour: 24}},
		Limits:      Limits{ActionsPerMinute: 10, MaxConcurrent: 2, MaxCostPerAction: 100},
		Anchors:     map[string]string{"refund": "give money back"},
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("got %v, want a valid contract", err)
	}
	e, _ := engineWith(t, c)
	got, ok := e.Contract("a")
	if !ok || got.Archetype != "financial-transactions" || !slices.Equal(got.Scope, c.Scope) {
		t.Errorf("got contract %+v, want the one set", got)
	}
	// The returned contract is a copy.
	got.Scope[0] = "changed"
	if again, _ := e.Contract("a"); again.Scope[0] != "read" {
		t.Errorf("got scope %v after changing a returned copy, want it unchanged", again.Scope)
	}
	if s := mustStatus(t, e, "a"); s.Prior != "financial-analyst" {
		t.Errorf("got prior %q, want financial-analyst", s.Prior)
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern, target string
		want            bool
	}{
		{"*", "anything/at/all", true},
		{"*", "", true},
		{"api.example.com/*", "api.example.com/a", true},
		{"api.example.com/*", "api.example.com/a/b", true},
		{"api.example.com/*", "api.example.com/a/b/c?x=1", true},
		{"api.example.com/*", "api.example.com.evil.net/a", false},
		{"api.example.com/*", "other.example.com/a", false},
		{"api.example.com/v1/*", "api.example.com/v1/users/42", true},
		{"api.example.com/v1/*", "api.example.com/v2/users", false},
		{"*.example.com/*", "api.example.com/a/b", true},
		{"*.example.com/*", "example.org/a", false},
		{"db/customers", "db/customers", true},
		{"db/customers", "db/customers2", false},
		{"db/customers", "db/customers/1", false},
		{"db/cust?mers", "db/customers", true},
	}
	for _, tc := range cases {
		t.Run(tc.pattern+" vs "+tc.target, func(t *testing.T) {
			if got := MatchGlob(tc.pattern, tc.target); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTargetKey(t *testing.T) {
	fin, err := PriorFor("financial-analyst")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		prior  *Prior
		target string
		want   string
	}{
		{"prior category", fin, "https://api/market/data", "market"},
		{"prior category, case-insensitive", fin, "s3://bucket/FINANCIAL-Reports", "financial"},
		{"first category of the prior wins", fin, "report/market", "market"},
		{"no category: first two segments", fin, "crm/accounts/7", "crm/accounts"},
		{"no prior: query removed, ids dropped", nil, "payments/orders/42?x=1", "payments/orders"},
		{"no prior: fragment removed", nil, "docs/guide#intro", "docs/guide"},
		{"scheme removed, lower case", nil, "https://API.example.com/v1/Users/123", "api.example.com/v1"},
		{"numeric id dropped", nil, "orders/12345/items", "orders/items"},
		{"uuid dropped", nil, "/orders/550e8400-e29b-41d4-a716-446655440000/items", "orders/items"},
		{"long hex hash dropped", nil, "blobs/0123456789abcdef0123/meta", "blobs/meta"},
		{"short hex kept", nil, "deadbeef/x", "deadbeef/x"},
		{"single segment", nil, "inventory", "inventory"},
		{"empty", nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := targetKey(tc.prior, tc.target); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSetRules(t *testing.T) {
	cases := []struct {
		name      string
		rules     []Rule
		wantField string // "": accepted
	}{
		{"valid rules", []Rule{{Name: "a", Expr: "true"}, {Name: "b", Expr: `action.type != "drop"`, Message: "no drops"}}, ""},
		{"no rules", nil, ""},
		{"empty name", []Rule{{Name: "", Expr: "true"}}, "rules[0].name"},
		{"duplicate name", []Rule{{Name: "a", Expr: "true"}, {Name: "a", Expr: "false"}}, "rules[1].name"},
		{"bad CEL", []Rule{{Name: "a", Expr: "true"}, {Name: "b", Expr: "action.type ==="}}, "rules[1].expr"},
		{"non-bool CEL", []Rule{{Name: "a", Expr: `"yes"`}}, "rules[0].expr"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newTestEngine(t)
			prev := []Rule{{Name: "keep", Expr: "true"}}
			if err := e.SetRules(prev); err != nil {
				t.Fatal(err)
			}
			err := e.SetRules(tc.rules)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				if got := e.Rules(); len(got) != len(tc.rules) {
					t.Errorf("got %d rules in force, want %d", len(got), len(tc.rules))
				}
				return
			}
			if fe := fieldErr(t, err); fe.Field != tc.wantField {
				t.Errorf("got field %q, want %q", fe.Field, tc.wantField)
			}
			if got := e.Rules(); !slices.Equal(got, prev) {
				t.Errorf("got rules %v after a refused set, want the previous %v", got, prev)
			}
		})
	}
}

// archetypeTable is ARCHETYPES.md: archetype -> prior ("" for none).
var archetypeTable = map[string]string{
	"customer-experience": "customer-experience", "data-processing": "data-processor",
	"security-monitoring": "security-monitor", "content-generation": "content-creator",
	"clinical-support": "healthcare-agent", "research-assistant": "research-analyst",
	"sales-assistant": "sales-agent", "analytics": "research-analyst",
	"financial-transactions": "financial-analyst", "underwriting": "financial-analyst",
	"system-administration": "operations-coordinator", "workflow-orchestration": "operations-coordinator",
	"supply-chain": "operations-coordinator", "content-moderation": "security-monitor",
	"compliance-audit": "security-monitor", "executive-support": "executive-assistant",
	"general-purpose": "",
}

var priorNames = []string{
	"customer-experience", "operations-coordinator", "financial-analyst", "data-processor", "content-creator",
	"security-monitor", "research-analyst", "sales-agent", "executive-assistant", "healthcare-agent",
}

func TestArchetypes(t *testing.T) {
	got := map[string]string{}
	names := []string{}
	for _, a := range Archetypes() {
		names = append(names, a.Name)
		if a.Prior == nil {
			got[a.Name] = ""
		} else {
			got[a.Name] = a.Prior.Name
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("got %v, want sorted by name", names)
	}
	mapped := 0
	for name, prior := range archetypeTable {
		if g, ok := got[name]; !ok || g != prior {
			t.Errorf("archetype %s: got prior %q (listed %v), want %q", name, g, ok, prior)
		}
		if prior != "" {
			mapped++
		}
	}
	if mapped != 16 {
		t.Errorf("got %d archetypes with a prior in the table, want 16", mapped)
	}
	for _, p := range priorNames {
		if g, ok := got[p]; !ok || g != p {
			t.Errorf("prior name %s: got %q (listed %v), want itself", p, g, ok)
		}
	}
	// 17 archetypes (16 with a prior, and general-purpose) plus the prior names
	// that are not also archetype names.
	if want := len(archetypeTable) + len(priorNames) - 1; len(names) != want {
		t.Errorf("got %d names, want %d", len(names), want)
	}
	if p, err := PriorFor("general-purpose"); err != nil || p != nil {
		t.Errorf("general-purpose: got %v, %v, want no prior", p, err)
	}
	if _, err := PriorFor("nonsense"); err == nil || !strings.Contains(err.Error(), "did you mean") {
		t.Errorf("got %v, want an error with a suggestion", err)
	}
}

func TestPriors(t *testing.T) {
	type row struct {
		actions  []Share
		targets  []string
		peak     []int
		active   []int
		rate     [2]float64
		outcomes [4]float64
		weights  [4]float64
	}
	business := []int{8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	all := make([]int, 24)
	for i := range all {
		all[i] = i
	}
	want := map[string]row{
		"customer-experience": {shares("read", .55, "write", .20, "send", .12, "query", .08, "escalate", .05),
			[]string{"customer", "order", "product", "communication"}, []int{10, 11, 12, 13, 14}, business, [2]float64{150, 400}, [4]float64{.92, .04, .03, .01}, [4]float64{1.2, 1.0, 0.8, 1.5}},
		"operations-coordinator": {shares("query", .30, "write", .25, "send", .20, "read", .15, "create", .10),
			[]string{"workflow", "agent", "status", "report", "config"}, []int{9, 10, 11, 14, 15, 16}, business, [2]float64{100, 300}, [4]float64{.95, .03, .01, .01}, [4]float64{1.0, 1.3, 1.0, 1.0}},
		"financial-analyst": {shares("read", .45, "query", .30, "write", .15, "escalate", .07, "send", .03),
			[]string{"financial", "market", "report", "compliance", "client"}, []int{8, 9, 10}, business, [2]float64{50, 200}, [4]float64{.88, .05, .05, .02}, [4]float64{1.5, 1.5, 1.2, 1.3}},
		"data-processor": {shares("read", .40, "write", .35, "query", .15, "create", .08, "delete", .02),
			[]string{"data", "storage", "pipeline", "cache"}, nil, all, [2]float64{500, 5000}, [4]float64{.97, .01, .01, .01}, [4]float64{1.0, 1.2, 0.5, 1.5}},
		"content-creator": {shares("create", .35, "write", .25, "read", .20, "query", .15, "send", .05),
			[]string{"content", "media", "template", "brand", "publish"}, []int{10, 11, 12, 13, 14, 15, 16}, business, [2]float64{30, 150}, [4]float64{.90, .06, .02, .02}, [4]float64{0.8, 1.0, 0.6, 1.0}},
		"security-monitor": {shares("read", .50, "query", .30, "escalate", .10, "write", .08, "send", .02),
			[]string{"logs", "network", "auth", "incident", "config"}, nil, all, [2]float64{200, 1000}, [4]float64{.96, .01, .02, .01}, [4]float64{1.3, 1.5, 0.8, 1.2}},
		"research-analyst": {shares("read", .40, "query", .35, "write", .12, "create", .08, "send", .05),
			[]string{"research", "external", "data", "document", "reference"}, []int{10, 11, 12, 13, 14, 15, 16}, append(slices.Clone(business), 18, 19), [2]float64{50, 200}, [4]float64{.93, .03, .02, .02}, [4]float64{0.8, 0.8, 0.6, 1.0}},
		"sales-agent": {shares("read", .30, "send", .25, "write", .20, "query", .15, "create", .10),
			[]string{"prospect", "client", "product", "communication", "crm"}, []int{10, 11, 12, 14, 15, 16}, business, [2]float64{100, 300}, [4]float64{.93, .03, .02, .02}, [4]float64{1.0, 1.2, 0.8, 1.0}},
		"executive-assistant": {shares("read", .30, "write", .25, "send", .20, "create", .15, "query", .10),
			[]string{"calendar", "communication", "document", "travel", "contact"}, []int{8, 9, 10}, business, [2]float64{80, 250}, [4]float64{.95, .02, .02, .01}, [4]float64{0.8, 1.0, 1.0, 1.0}},
		"healthcare-agent": {shares("read", .40, "query", .25, "write", .15, "escalate", .12, "send", .08),
			[]string{"patient", "clinical", "schedule", "pharmacy", "insurance"}, []int{8, 9, 10, 11, 12}, all, [2]float64{100, 400}, [4]float64{.87, .05, .06, .02}, [4]float64{1.3, 1.5, 0.8, 1.5}},
	}
	for _, p := range priors() {
		t.Run(p.Name, func(t *testing.T) {
			w, ok := want[p.Name]
			if !ok {
				t.Fatalf("unexpected prior %s", p.Name)
			}
			if !slices.Equal(p.Actions, w.actions) {
				t.Errorf("got actions %v, want %v", p.Actions, w.actions)
			}
			var keys []string
			var sum float64
			for _, s := range p.Targets {
				keys = append(keys, s.Key)
				sum += s.Share
			}
			if !slices.Equal(keys, w.targets) || !approx(sum, 1) {
				t.Errorf("got target categories %v (sum %v), want %v (sum 1)", keys, sum, w.targets)
			}
			if !slices.Equal(p.PeakHours, w.peak) || !slices.Equal(p.ActiveHours, w.active) {
				t.Errorf("got peak %v active %v, want %v and %v", p.PeakHours, p.ActiveHours, w.peak, w.active)
			}
			if p.RateMin != w.rate[0] || p.RateMax != w.rate[1] {
				t.Errorf("got rate %v-%v, want %v-%v", p.RateMin, p.RateMax, w.rate[0], w.rate[1])
			}
			if !slices.Equal(p.Outcomes, outcomes(w.outcomes[0], w.outcomes[1], w.outcomes[2], w.outcomes[3])) {
				t.Errorf("got outcomes %v, want %v", p.Outcomes, w.outcomes)
			}
			dw := p.DriftWeights
			if dw != (DriftWeights{w.weights[0], w.weights[1], w.weights[2], w.weights[3], 1}) {
				t.Errorf("got drift weights %+v, want %v and semantic 1", dw, w.weights)
			}
			var hs float64
			for _, s := range p.hourShares() {
				hs += s.Share
			}
			if math.Abs(hs-1) > 1e-9 {
				t.Errorf("got hour shares summing to %v, want 1", hs)
			}
		})
	}
}

func TestAssessReversibility(t *testing.T) {
	cases := []struct {
		name string
		act  Action
		want Reversibility
	}{
		{"delete", Action{Type: "delete_user"}, Irreversible},
		{"drop, upper case", Action{Type: "DROP_TABLE"}, Irreversible},
		{"destroy", Action{Type: "destroy_vm"}, Irreversible},
		{"transfer", Action{Type: "wire_transfer"}, Irreversible},
		{"pay", Action{Type: "pay_invoice"}, Irreversible},
		{"refund", Action{Type: "refund"}, Irreversible},
		{"charge", Action{Type: "charge_card"}, Irreversible},
		{"deploy", Action{Type: "deploy"}, Irreversible},
		{"publish", Action{Type: "publish_post"}, Irreversible},
		{"send", Action{Type: "send_email"}, Irreversible},
		{"broadcast", Action{Type: "broadcast"}, Irreversible},
		{"irreversible word wins over a read word", Action{Type: "read_and_delete"}, Irreversible},
		{"type word wins over GET", Action{Type: "delete", Method: "GET"}, Irreversible},
		{"create", Action{Type: "create_ticket"}, Compensable},
		{"update", Action{Type: "update"}, Compensable},
		{"write", Action{Type: "write_file"}, Compensable},
		{"modify", Action{Type: "modify_record"}, Compensable},
		{"read", Action{Type: "read_file"}, Reversible},
		{"get", Action{Type: "get_user"}, Reversible},
		{"list", Action{Type: "list"}, Reversible},
		{"query", Action{Type: "query_db"}, Reversible},
		{"search", Action{Type: "search"}, Reversible},
		{"fetch", Action{Type: "fetch_page"}, Reversible},
		{"GET method", Action{Type: "tool_call", Method: "GET"}, Reversible},
		{"HEAD method, lower case", Action{Type: "tool_call", Method: "head"}, Reversible},
		{"POST method: unknown", Action{Type: "tool_call", Method: "POST"}, Compensable},
		{"declared reversible overrides delete", Action{Type: "delete", Reversibility: Reversible}, Reversible},
		{"declared irreversible overrides read", Action{Type: "read", Reversibility: Irreversible}, Irreversible},
		{"unknown type: compensable", Action{Type: "archive"}, Compensable},
		{"empty type: compensable", Action{}, Compensable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := assessReversibility(&tc.act); got != tc.want || why == "" {
				t.Errorf("got %s (%q), want %s with a reason", got, why, tc.want)
			}
		})
	}
	t.Run("recorded in the decision", func(t *testing.T) {
		e, _ := engineWith(t, Contract{AgentID: "a"})
		d := dryAct(t, e, "a", Action{Type: "tool_call", Target: "x", Method: "GET"})
		s, _ := findStep(d, StepReversibility)
		if d.Reversibility.Level != Reversible || s.Output.(*ReversibilityOutput).Level != Reversible {
			t.Errorf("got %s (step %+v), want reversible", d.Reversibility.Level, s.Output)
		}
	})
}

func TestParseReversibility(t *testing.T) {
	for _, r := range []Reversibility{Reversible, Compensable, Irreversible} {
		got, err := ParseReversibility(r.String())
		if err != nil || got != r {
			t.Errorf("%s: got %v, %v, want itself", r, got, err)
		}
	}
	if got, err := ParseReversibility(""); err != nil || got != 0 {
		t.Errorf("empty: got %v, %v, want the zero value", got, err)
	}
	if _, err := ParseReversibility("undoable"); err == nil {
		t.Errorf("got nil error for an unknown level, want one")
	}
}

func TestVerdictText(t *testing.T) {
	for _, v := range []Verdict{Allow, Deny, Escalate, Modify, Suspend} {
		b, err := v.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Verdict
		if err := back.UnmarshalText(b); err != nil || back != v {
			t.Errorf("%s: got %v, %v, want a round trip", v, back, err)
		}
	}
	if _, err := Verdict(0).MarshalText(); err == nil {
		t.Errorf("zero verdict: got nil error, want one")
	}
	if _, err := ParseVerdict("allow"); err == nil {
		t.Errorf("lower-case name: got nil error, want one")
	}
}

func TestContractInScope(t *testing.T) {
	tests := []struct {
		name  string
		scope []string
		typ   string
		want  bool
	}{
		{"no scope allows all", nil, "anything", true},
		{"star allows all", []string{"read", "*"}, "anything", true},
		{"listed type", []string{"read", "search"}, "search", true},
		{"unlisted type", []string{"read", "search"}, "delete", false},
		{"no globbing", []string{"search*"}, "search_docs", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Contract{AgentID: "a", Scope: tc.scope}
			if got := c.InScope(tc.typ); got != tc.want {
				t.Errorf("InScope(%q) with scope %q: got %t, want %t", tc.typ, tc.scope, got, tc.want)
			}
		})
	}
}
