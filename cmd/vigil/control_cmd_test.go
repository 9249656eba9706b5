package main

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// The keys of the control CLI tests.
const (
	ctlOperatorKey = "cli-operator-key"
	ctlViewerKey   = "cli-viewer-key"
)

// controlFixture is a real admin server over a real engine (agents "bot",
// team ops, and "other", team web) and a control plane over a memory store
// (nil plane: the control plane is disabled).
type controlFixture struct {
	url string
	eng *governor.Engine
}

func newControlFixture(t *testing.T, enabled bool) controlFixture {
	t.Helper()
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	for _, c := range []governor.Contract{
		{AgentID: "bot", Team: "ops", Scope: []string{"read"}},
		{AgentID: "other", Team: "web", Scope: []string{"read"}},
	} {
		if err := eng.SetContract(c); err != nil {
			t.Fatalf("SetContract: %v", err)
		}
	}
	var plane *controlplane.Plane
	if enabled {
		if plane, err = controlplane.New(controlplane.DefaultConfig(), eng, eng, controlplane.NewMemoryStore()); err != nil {
			t.Fatalf("controlplane.New: %v", err)
		}
	}
	s, err := admin.New(admin.Options{Governor: eng, Control: plane, Keys: []admin.Key{
		{Key: ctlOperatorKey, Principal: "cli-operator", Role: admin.RoleOperator},
		{Key: ctlViewerKey, Principal: "cli-viewer", Role: admin.RoleViewer},
	}})
	if err != nil {
		t.Fatalf("admin.New: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return controlFixture{url: srv.URL, eng: eng}
}

// ctl runs `vigil control ARGS --server URL` with key in VIGIL_API_KEY.
func (f controlFixture) ctl(t *testing.T, key string, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, env(map[string]string{"VIGIL_API_KEY": key}), append(append([]string{"control"}, args...), "--server", f.url)...)
}

// issued reads the output of issue or expire: the id line, then the
// directive as indented JSON.
func issued(t *testing.T, out string) wire.Directive {
	t.Helper()
	id, rest, ok := strings.Cut(out, "\n")
	if !ok {
		t.Fatalf("output %q: want an id line and the directive", out)
	}
	var d wire.Directive
	if err := json.Unmarshal([]byte(rest), &d); err != nil {
		t.Fatalf("directive JSON %q: %v", rest, err)
	}
	if d.ID != id || !strings.HasPrefix(id, "dir_") {
		t.Errorf("first line: got %q, want the directive id %q", id, d.ID)
	}
	if !strings.HasPrefix(rest, "{\n  \"id\"") {
		t.Errorf("directive: got %q, want indented JSON", rest)
	}
	return d
}

func TestControlIssueListExpire(t *testing.T) {
	f := newControlFixture(t, true)

	code, out, errOut := f.ctl(t, ctlOperatorKey, "issue", "--type", "quarantine", "--agent", "bot", "--reason", "odd refunds", "--duration", "30m")
	if code != exitOK {
		t.Fatalf("issue quarantine: exit %d, stderr %s", code, errOut)
	}
	q := issued(t, out)
	if q.Type != "quarantine" || !slices.Equal(q.ResolvedAgents, []string{"bot"}) || q.Operator != "cli-operator" ||
		q.DurationSeconds == nil || *q.DurationSeconds != 1800 || q.Reason != "odd refunds" {
		t.Errorf("quarantine: got %+v, want bot quarantined for 1800 s by cli-operator", q)
	}
	d, err := f.eng.Evaluate(governor.Request{AgentID: "bot", Action: governor.Action{Type: "read", Target: "x"}})
	if err != nil || d.Verdict != governor.Escalate {
		t.Errorf("evaluate after quarantine: got %v, %v; want ESCALATE", d.Verdict, err)
	}

	code, out, errOut = f.ctl(t, ctlOperatorKey, "issue", "--type=tighten", "--team", "web", "--factor", "0.5")
	if code != exitOK {
		t.Fatalf("issue tighten: exit %d, stderr %s", code, errOut)
	}
	tg := issued(t, out)
	if tg.Parameters.Factor == nil || *tg.Parameters.Factor != 0.5 || !slices.Equal(tg.ResolvedAgents, []string{"other"}) || tg.ExpiresAt != nil {
		t.Errorf("tighten: got %+v, want factor 0.5 on other, no expiry", tg)
	}

	code, out, errOut = f.ctl(t, ctlOperatorKey, "issue", "--type", "enforce", "--agent", "bot", "--agent", "other",
		"--invariant", "small=!has(action.parameters.amount) || action.parameters.amount <= 10", "--invariant", "reads=action.type == 'read'")
	if code != exitOK {
		t.Fatalf("issue enforce: exit %d, stderr %s", code, errOut)
	}
	en := issued(t, out)
	if len(en.Parameters.Invariants) != 2 || en.Parameters.Invariants[1] != (wire.DirectiveInvariant{Name: "reads", Expr: "action.type == 'read'"}) {
		t.Errorf("enforce: got invariants %+v, want small and reads", en.Parameters.Invariants)
	}

	// list: a header and one aligned line per directive, oldest first.
	code, out, errOut = f.ctl(t, ctlViewerKey, "list")
	if code != exitOK {
		t.Fatalf("list: exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "ID TYPE TARGETS EXPIRES REASON" {
		t.Fatalf("list: got %q, want a header and 3 lines", out)
	}
	col := strings.Index(lines[0], "TARGETS")
	for i, want := range [][]string{
		{q.ID, "quarantine", "bot", *q.ExpiresAt, "odd", "refunds"},
		{tg.ID, "tighten", "other", "never", "-"},
		{en.ID, "enforce", "bot,other", "never", "-"},
	} {
		if got := strings.Fields(lines[i+1]); !slices.Equal(got, want) {
			t.Errorf("line %d: got %v, want %v", i+1, got, want)
		}
		if !strings.HasPrefix(lines[i+1][col:], want[2]) {
			t.Errorf("line %d: TARGETS not aligned under its header: %q", i+1, lines[i+1])
		}
	}
	code, out, _ = f.ctl(t, ctlViewerKey, "list", "--json")
	var list wire.DirectiveList
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Directives) != 3 {
		t.Errorf("list --json: exit %d, got %q, want the 3 directives as JSON", code, out)
	}

	// show and expire.
	code, out, _ = f.ctl(t, ctlViewerKey, "show", q.ID)
	var shown wire.Directive
	if code != exitOK || json.Unmarshal([]byte(out), &shown) != nil || shown.ID != q.ID {
		t.Errorf("show: exit %d, got %q, want the quarantine", code, out)
	}
	code, out, errOut = f.ctl(t, ctlOperatorKey, "expire", q.ID)
	if code != exitOK {
		t.Fatalf("expire: exit %d, stderr %s", code, errOut)
	}
	if e := issued(t, out); e.ID != q.ID || e.Status != "expired" {
		t.Errorf("expire: got %+v, want the quarantine expired", e)
	}
	d, err = f.eng.Evaluate(governor.Request{AgentID: "bot", Action: governor.Action{Type: "read", Target: "x"}})
	if err != nil || d.Verdict == governor.Escalate {
		t.Errorf("evaluate after expire: got %v, %v; want no ESCALATE", d.Verdict, err)
	}

	// API errors exit 1 with the server's code.
	for _, tc := range []struct {
		name, key string
		args      []string
		want      string
	}{
		{"expired again", ctlOperatorKey, []string{"expire", q.ID}, "conflict: directive " + q.ID + " already expired"},
		{"unknown id", ctlOperatorKey, []string{"expire", "dir_nope"}, "not_found: no directive dir_nope"},
		{"unknown id shown", ctlViewerKey, []string{"show", "dir_nope"}, "not_found"},
		{"viewer may not issue", ctlViewerKey, []string{"issue", "--type", "quarantine", "--agent", "bot"}, "forbidden"},
		{"bad CEL", ctlOperatorKey, []string{"issue", "--type", "enforce", "--agent", "bot", "--invariant", "x=action.type =="}, "(field parameters.invariants[0].expr)"},
		{"zero factor", ctlOperatorKey, []string{"issue", "--type", "tighten", "--agent", "bot", "--factor", "0"}, "(field parameters.factor)"},
		{"other operator", ctlOperatorKey, []string{"issue", "--type", "quarantine", "--agent", "bot", "--operator", "mallory"}, "forbidden: operator"},
		{"no key", "", []string{"list"}, "unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := f.ctl(t, tc.key, tc.args...)
			if code != exitFail || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tc.want)
			}
		})
	}
}

func TestControlUsageErrors(t *testing.T) {
	f := newControlFixture(t, true)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage: vigil control"},
		{"unknown command", []string{"banish"}, `unknown command "banish"`},
		{"no type", []string{"issue", "--agent", "bot"}, "--type is required"},
		{"unknown type", []string{"issue", "--type", "banish", "--agent", "bot"}, "unknown directive type"},
		{"no target", []string{"issue", "--type", "quarantine"}, "a target is required"},
		{"bad invariant", []string{"issue", "--type", "enforce", "--agent", "bot", "--invariant", "no-equals"}, "want NAME=EXPR"},
		{"bad duration", []string{"issue", "--type", "quarantine", "--agent", "bot", "--duration", "soon"}, "--duration"},
		{"negative duration", []string{"issue", "--type", "quarantine", "--agent", "bot", "--duration", "-5m"}, "must be positive"},
		{"zero duration", []string{"issue", "--type", "quarantine", "--agent", "bot", "--duration", "0"}, "must be positive"},
		{"bad factor", []string{"issue", "--type", "tighten", "--agent", "bot", "--factor", "half"}, "invalid value"},
		{"issue takes no argument", []string{"issue", "--type", "quarantine", "--agent", "bot", "extra"}, "want no arguments"},
		{"expire needs an id", []string{"expire"}, "want 1 argument"},
		{"expire one id", []string{"expire", "a", "b"}, "want 1 argument"},
		{"unknown flag", []string{"list", "--colour"}, "flag provided but not defined"},
		{"bad server", []string{"list", "--server", "ftp://x"}, "--server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"control"}, tc.args...)
			if len(tc.args) > 0 && tc.name != "bad server" {
				args = append(args, "--server", f.url)
			}
			code, _, errOut := runCLI(t, env(map[string]string{"VIGIL_API_KEY": ctlOperatorKey}), args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
	code, out, _ := runCLI(t, nil, "control", "help")
	if code != exitOK || !strings.Contains(out, "vigil control <command>") {
		t.Errorf("help: exit %d, got %q", code, out)
	}
}

func TestControlDisabled(t *testing.T) {
	f := newControlFixture(t, false)
	code, _, errOut := f.ctl(t, ctlOperatorKey, "issue", "--type", "quarantine", "--agent", "bot")
	if code != exitFail || !strings.Contains(errOut, "control_plane_disabled") {
		t.Errorf("issue: exit %d, stderr %q; want 1 and control_plane_disabled", code, errOut)
	}
	code, out, _ := f.ctl(t, ctlViewerKey, "list")
	if code != exitOK || strings.TrimSpace(out) != "ID  TYPE  TARGETS  EXPIRES  REASON" {
		t.Errorf("list: exit %d, got %q, want only the header", code, out)
	}
}
