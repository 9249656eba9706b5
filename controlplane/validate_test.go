package controlplane_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
)

func TestIssueRefusesMalformedRequests(t *testing.T) {
	ids := controlplane.Target{AgentIDs: []string{"a1"}}
	inv := func(name, expr string) []controlplane.Invariant {
		return []controlplane.Invariant{{Name: name, Expr: expr}}
	}
	cases := []struct {
		name      string
		req       controlplane.IssueRequest
		field     string
		msgHas    string
		noDefault bool // keep an empty operator
	}{
		{"empty operator", controlplane.IssueRequest{Type: "quarantine", Target: ids}, "operator", "required", true},
		{"unknown type", controlplane.IssueRequest{Type: "freeze", Target: ids}, "type", `"freeze"`, false},
		{"type in upper case", controlplane.IssueRequest{Type: "QUARANTINE", Target: ids}, "type", "unknown", false},
		{"no type", controlplane.IssueRequest{Target: ids}, "type", "unknown", false},
		{"no target criterion", controlplane.IssueRequest{Type: "quarantine"}, "target", "at least one", false},
		{"empty agent id", controlplane.IssueRequest{Type: "quarantine", Target: controlplane.Target{AgentIDs: []string{"a1", ""}}}, "target.agent_ids[1]", "empty", false},
		{"unknown drift status", controlplane.IssueRequest{Type: "quarantine", Target: controlplane.Target{DriftStatus: "high"}}, "target.drift_status", `"high"`, false},
		{"unknown archetype", controlplane.IssueRequest{Type: "quarantine", Target: controlplane.Target{Archetype: "financial-analyts"}}, "target.archetype", "did you mean", false},
		{"tighten without factor", controlplane.IssueRequest{Type: "tighten", Target: ids}, "parameters.factor", "requires", false},
		{"tighten with a negative factor", controlplane.IssueRequest{Type: "tighten", Target: ids, Parameters: controlplane.Parameters{Factor: -0.5}}, "parameters.factor", "positive", false},
		{"tighten with NaN", controlplane.IssueRequest{Type: "tighten", Target: ids, Parameters: controlplane.Parameters{Factor: math.NaN()}}, "parameters.factor", "finite", false},
		{"tighten with +Inf", controlplane.IssueRequest{Type: "tighten", Target: ids, Parameters: controlplane.Parameters{Factor: math.Inf(1)}}, "parameters.factor", "finite", false},
		{"enforce without invariants", controlplane.IssueRequest{Type: "enforce", Target: ids}, "parameters.invariants", "non-empty", false},
		{"enforce with an unnamed invariant", controlplane.IssueRequest{Type: "enforce", Target: ids, Parameters: controlplane.Parameters{Invariants: inv("", "true")}}, "parameters.invariants[0].name", "required", false},
		{"enforce with invalid CEL", controlplane.IssueRequest{Type: "enforce", Target: ids, Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{
			{Name: "ok", Expr: `action.type != "delete"`}, {Name: "bad", Expr: `action.type ==`}}}}, "parameters.invariants[1].expr", "invalid CEL", false},
		{"enforce with a non-bool expression", controlplane.IssueRequest{Type: "enforce", Target: ids, Parameters: controlplane.Parameters{Invariants: inv("n", `1 + 2`)}}, "parameters.invariants[0].expr", "want bool", false},
		{"enforce with an empty expression", controlplane.IssueRequest{Type: "enforce", Target: ids, Parameters: controlplane.Parameters{Invariants: inv("e", " ")}}, "parameters.invariants[0].expr", "required", false},
		{"enforce with duplicate names", controlplane.IssueRequest{Type: "enforce", Target: ids, Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{
			{Name: "x", Expr: "true"}, {Name: "x", Expr: "false"}}}}, "parameters.invariants[1].name", "duplicate", false},
		{"re_anchor without term", controlplane.IssueRequest{Type: "re_anchor", Target: ids, Parameters: controlplane.Parameters{Term: "  "}}, "parameters.term", "requires a term", false},
		{"broadcast_reminder without message", controlplane.IssueRequest{Type: "broadcast_reminder", Target: ids}, "parameters.message", "requires a message", false},
		{"quarantine with a factor", controlplane.IssueRequest{Type: "quarantine", Target: ids, Parameters: controlplane.Parameters{Factor: 0.5}}, "parameters.factor", "takes no parameters", false},
		{"release with a term and a message", controlplane.IssueRequest{Type: "release", Target: ids, Parameters: controlplane.Parameters{Term: "x", Message: "y"}}, "parameters.term", "term, message", false},
		{"tighten with invariants", controlplane.IssueRequest{Type: "tighten", Target: ids, Parameters: controlplane.Parameters{Factor: 0.5, Invariants: inv("x", "true")}}, "parameters.invariants", "takes only factor", false},
		{"enforce with a message", controlplane.IssueRequest{Type: "enforce", Target: ids, Parameters: controlplane.Parameters{Invariants: inv("x", "true"), Message: "m"}}, "parameters.message", "takes only invariants", false},
		{"broadcast_reminder with a factor", controlplane.IssueRequest{Type: "broadcast_reminder", Target: ids, Parameters: controlplane.Parameters{Message: "m", Factor: 2}}, "parameters.factor", "takes only message", false},
		{"negative duration", controlplane.IssueRequest{Type: "quarantine", Target: ids, Duration: -time.Second}, "duration_seconds", "negative", false},
		{"release with a duration", controlplane.IssueRequest{Type: "release", Target: ids, Duration: time.Minute}, "duration_seconds", "no duration", false},
		{"relax with a duration", controlplane.IssueRequest{Type: "relax", Target: ids, Duration: time.Minute}, "duration_seconds", "no duration", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			req := tc.req
			if !tc.noDefault {
				req.Operator = "alice"
			}
			if err := req.Validate(); err == nil {
				t.Fatalf("Validate: got nil, want an error on %s", tc.field)
			}
			_, err := f.p.Issue(context.Background(), req)
			fe := fieldError(t, err)
			if fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msgHas) {
				t.Errorf("got field %q message %q, want field %q with a message containing %q", fe.Field, fe.Msg, tc.field, tc.msgHas)
			}
			if list, _ := f.p.List(context.Background()); len(list) != 0 {
				t.Errorf("got %d active directives after a refused issue, want 0", len(list))
			}
			if evs := f.events(t, controlplane.EventFilter{}); len(evs) != 0 {
				t.Errorf("got %d events after a refused issue, want 0", len(evs))
			}
		})
	}
}

func TestIssueAcceptsEveryType(t *testing.T) {
	ids := controlplane.Target{AgentIDs: []string{"a1"}}
	cases := []struct {
		name       string
		req        controlplane.IssueRequest
		wantStatus string
		wantAgents []string
		wantTerm   string
	}{
		{"enforce", controlplane.IssueRequest{Type: "enforce", Target: ids, Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: "n", Expr: "true"}}}}, "active", []string{"a1"}, ""},
		{"quarantine", controlplane.IssueRequest{Type: "quarantine", Target: ids}, "active", []string{"a1"}, ""},
		{"release", controlplane.IssueRequest{Type: "release", Target: ids}, "expired", []string{"a1"}, ""},
		{"tighten above 1 (looser)", controlplane.IssueRequest{Type: "tighten", Target: ids, Parameters: controlplane.Parameters{Factor: 1.5}}, "active", []string{"a1"}, ""},
		{"relax", controlplane.IssueRequest{Type: "relax", Target: ids}, "expired", []string{"a1"}, ""},
		{"re_anchor: the term is trimmed and lower-cased", controlplane.IssueRequest{Type: "re_anchor", Target: ids, Parameters: controlplane.Parameters{Term: " Refund "}}, "active", []string{"a1"}, "refund"},
		{"broadcast_reminder", controlplane.IssueRequest{Type: "broadcast_reminder", Target: ids, Parameters: controlplane.Parameters{Message: "stay in scope"}}, "active", []string{"a1"}, ""},
		{"unknown agent ids resolve to nobody", controlplane.IssueRequest{Type: "quarantine", Target: controlplane.Target{AgentIDs: []string{"ghost"}}}, "active", []string{}, ""},
		{"an archetype nobody has", controlplane.IssueRequest{Type: "quarantine", Target: controlplane.Target{Archetype: "sales-agent"}}, "active", []string{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			issuedAt := f.clk.Now()
			d := f.issue(t, tc.req)
			if d.Status != tc.wantStatus || string(d.Type) != tc.req.Type {
				t.Errorf("got type %s status %s, want %s %s", d.Type, d.Status, tc.req.Type, tc.wantStatus)
			}
			if d.ResolvedAgents == nil || strings.Join(d.ResolvedAgents, ",") != strings.Join(tc.wantAgents, ",") {
				t.Errorf("got resolved agents %#v, want %#v", d.ResolvedAgents, tc.wantAgents)
			}
			if d.Parameters.Term != tc.wantTerm {
				t.Errorf("got term %q, want %q", d.Parameters.Term, tc.wantTerm)
			}
			if !d.IssuedAt.Equal(issuedAt) || d.Operator != "alice" {
				t.Errorf("got issued at %v by %q, want %v by alice", d.IssuedAt, d.Operator, issuedAt)
			}
			if d.Status == "expired" && !d.ExpiredAt.Equal(d.IssuedAt) {
				t.Errorf("instantaneous directive: got expired at %v, want its issue time %v", d.ExpiredAt, d.IssuedAt)
			}
			if d.Status == "active" && !d.ExpiredAt.IsZero() {
				t.Errorf("active directive: got expired at %v, want zero", d.ExpiredAt)
			}
		})
	}
}

func TestParseType(t *testing.T) {
	for _, s := range []string{"enforce", "quarantine", "release", "tighten", "relax", "re_anchor", "broadcast_reminder"} {
		if got, err := controlplane.ParseType(s); err != nil || string(got) != s {
			t.Errorf("ParseType(%q): got %q, %v; want %q, nil", s, got, err, s)
		}
	}
	for _, s := range []string{"", "Enforce", "reanchor", "suspend"} {
		if _, err := controlplane.ParseType(s); err == nil {
			t.Errorf("ParseType(%q): got nil error, want one", s)
		}
	}
}

func TestFieldErrorIsAnError(t *testing.T) {
	var err error = &controlplane.FieldError{Field: "parameters.factor", Msg: "must be positive"}
	if err.Error() != "parameters.factor: must be positive" {
		t.Errorf("got %q", err.Error())
	}
	var fe *controlplane.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("errors.As failed")
	}
}
