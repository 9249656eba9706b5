package main

import (
	"context"
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

// approvalsFixture is a real admin server with an override queue over a
// memory store; agent "bot" has its exports held for a human.
type approvalsFixture struct {
	url string
	eng *governor.Engine
	q   *controlplane.Approvals
}

var exportAction = governor.Action{Type: "export", Target: "reports/7", Parameters: map[string]any{"format": "csv"}}

func newApprovalsFixture(t *testing.T, withApprovals bool) approvalsFixture {
	t.Helper()
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	if err := eng.SetContract(governor.Contract{AgentID: "bot", Scope: []string{"*"}, HumanOverride: []string{"export"}}); err != nil {
		t.Fatalf("SetContract: %v", err)
	}
	var q *controlplane.Approvals
	if withApprovals {
		store := controlplane.NewMemoryStore()
		if q, err = controlplane.NewApprovals(controlplane.ApprovalConfig{}, store, store, eng); err != nil {
			t.Fatalf("NewApprovals: %v", err)
		}
	}
	s, err := admin.New(admin.Options{Governor: eng, Approvals: q, Keys: []admin.Key{
		{Key: ctlOperatorKey, Principal: "cli-operator", Role: admin.RoleOperator},
		{Key: ctlViewerKey, Principal: "cli-viewer", Role: admin.RoleViewer},
	}})
	if err != nil {
		t.Fatalf("admin.New: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return approvalsFixture{url: srv.URL, eng: eng, q: q}
}

// hold evaluates the export and requests its approval, as the proxy does.
func (f approvalsFixture) hold(t *testing.T, reason string) controlplane.Approval {
	t.Helper()
	if d := f.eval(t); d.Verdict != governor.Escalate {
		t.Fatalf("export: got %s, want ESCALATE", d.Verdict)
	}
	a, err := f.q.Request(context.Background(), controlplane.RequestArgs{AgentID: "bot", Action: exportAction, Reason: reason})
	if err != nil {
		t.Fatalf("Request: %v", err)
	}
	return a
}

func (f approvalsFixture) eval(t *testing.T) *governor.Decision {
	t.Helper()
	d, err := f.eng.Evaluate(governor.Request{AgentID: "bot", Action: exportAction})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return d
}

// cli runs `vigil approvals ARGS --server URL` with key in VIGIL_API_KEY.
func (f approvalsFixture) cli(t *testing.T, key string, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, env(map[string]string{"VIGIL_API_KEY": key}), append(append([]string{"approvals"}, args...), "--server", f.url)...)
}

// decided reads the output of approve or deny: the id line, then the
// approval as indented JSON.
func decided(t *testing.T, out string) wire.Approval {
	t.Helper()
	id, rest, ok := strings.Cut(out, "\n")
	if !ok {
		t.Fatalf("output %q: want an id line and the approval", out)
	}
	var a wire.Approval
	if err := json.Unmarshal([]byte(rest), &a); err != nil {
		t.Fatalf("approval JSON %q: %v", rest, err)
	}
	if a.ID != id || !strings.HasPrefix(rest, "{\n  \"id\"") {
		t.Errorf("output: got id line %q and %q, want the approval's id and indented JSON", id, rest)
	}
	return a
}

func TestApprovalsListApproveDeny(t *testing.T) {
	f := newApprovalsFixture(t, true)
	first := f.hold(t, "export needs a human")
	second := f.hold(t, "second\tattempt")

	code, out, errOut := f.cli(t, ctlViewerKey, "list")
	if code != exitOK {
		t.Fatalf("list: exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "ID STATUS AGENT ACTION TARGET CREATED REASON" {
		t.Fatalf("list: got %q, want a header and 2 lines", out)
	}
	created := func(a controlplane.Approval) string { return wire.Time(a.CreatedAt) }
	for i, want := range [][]string{
		{second.ID, "pending", "bot", "export", "reports/7", created(second), "second\ufffdattempt"},
		{first.ID, "pending", "bot", "export", "reports/7", created(first), "export", "needs", "a", "human"},
	} {
		if got := strings.Fields(lines[i+1]); !slices.Equal(got, want) {
			t.Errorf("line %d: got %v, want %v", i+1, got, want)
		}
	}

	// approve: the identical action passes once.
	code, out, errOut = f.cli(t, ctlOperatorKey, "approve", first.ID, "--reason", "checked")
	if code != exitOK {
		t.Fatalf("approve: exit %d, stderr %s", code, errOut)
	}
	if a := decided(t, out); a.Status != "approved" || a.DecidedBy == nil || *a.DecidedBy != "cli-operator" || a.DecisionReason != "checked" {
		t.Errorf("approve: got %+v, want approved by cli-operator", a)
	}
	if d := f.eval(t); d.Verdict != governor.Allow {
		t.Errorf("retry after approve: got %s, want ALLOW", d.Verdict)
	}

	code, out, errOut = f.cli(t, ctlOperatorKey, "deny", "--reason=no", second.ID)
	if code != exitOK {
		t.Fatalf("deny: exit %d, stderr %s", code, errOut)
	}
	if a := decided(t, out); a.Status != "denied" || a.DecisionReason != "no" {
		t.Errorf("deny: got %+v, want denied", a)
	}

	code, out, _ = f.cli(t, ctlViewerKey, "list", "--status", "approved", "--json")
	var list wire.ApprovalList
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Approvals) != 1 || list.Approvals[0].ID != first.ID {
		t.Errorf("list --status approved --json: exit %d, got %q, want the first approval", code, out)
	}
	code, out, _ = f.cli(t, ctlViewerKey, "list", "--limit", "1")
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); code != exitOK || len(lines) != 2 || !strings.HasPrefix(lines[1], second.ID) {
		t.Errorf("list --limit 1: exit %d, got %q, want the newest", code, out)
	}

	// API errors exit 1 with the server's code.
	for _, tc := range []struct {
		name, key string
		args      []string
		want      string
	}{
		{"decided already", ctlOperatorKey, []string{"deny", first.ID}, "conflict: approval " + first.ID + " already approved"},
		{"unknown id", ctlOperatorKey, []string{"approve", "apr_nope"}, "not_found: no approval apr_nope"},
		{"viewer may not decide", ctlViewerKey, []string{"approve", second.ID}, "forbidden"},
		{"other operator", ctlOperatorKey, []string{"approve", second.ID, "--operator", "mallory"}, "forbidden: operator"},
		{"no key", "", []string{"list"}, "unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := f.cli(t, tc.key, tc.args...)
			if code != exitFail || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tc.want)
			}
		})
	}
}

func TestApprovalsWithoutQueue(t *testing.T) {
	f := newApprovalsFixture(t, false)
	code, out, _ := f.cli(t, ctlViewerKey, "list")
	if code != exitOK || strings.TrimSpace(out) != "ID  STATUS  AGENT  ACTION  TARGET  CREATED  REASON" {
		t.Errorf("list: exit %d, got %q, want the header alone", code, out)
	}
	code, _, errOut := f.cli(t, ctlOperatorKey, "approve", "apr_x")
	if code != exitFail || !strings.Contains(errOut, "control_plane_disabled") {
		t.Errorf("approve: exit %d, stderr %q; want 1 and control_plane_disabled", code, errOut)
	}
}

func TestApprovalsUsageErrors(t *testing.T) {
	f := newApprovalsFixture(t, true)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage: vigil approvals"},
		{"unknown command", []string{"grant"}, `unknown command "grant"`},
		{"approve without id", []string{"approve"}, "want 1 argument (ID), got 0"},
		{"deny with two ids", []string{"deny", "a", "b"}, "want 1 argument (ID), got 2"},
		{"list with an argument", []string{"list", "pending"}, "want no arguments"},
		{"unknown status", []string{"list", "--status", "open"}, "--status: want pending, approved, denied or expired"},
		{"zero limit", []string{"list", "--limit", "0"}, "--limit: must be positive"},
		{"list takes no reason", []string{"list", "--reason", "x"}, "flag provided but not defined: -reason"},
		{"bad server", []string{"list", "--server", "ftp://x"}, "--server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"approvals"}, tc.args...)
			if tc.name != "bad server" {
				args = append(args, "--server", f.url)
			}
			if tc.args == nil {
				args = []string{"approvals"}
			}
			code, _, errOut := runCLI(t, env(nil), args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
	code, out, _ := runCLI(t, env(nil), "approvals", "help")
	if code != exitOK || !strings.Contains(out, "approve ID [--reason R]") {
		t.Errorf("help: exit %d, got %q", code, out)
	}
}
