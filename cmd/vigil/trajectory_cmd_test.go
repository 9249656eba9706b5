package main

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// trajectoryFixture is a real admin server over a real engine in which
// "drifter" read 40 times, then deleted 20 times (its drift rises) and
// "calm" only read; url serves with the optimizer off, optURL with it on
// (its fleet view waits as long as it takes for current policies).
type trajectoryFixture struct {
	url, optURL string
	eng         *governor.Engine
}

func newTrajectoryFixture(t *testing.T) trajectoryFixture {
	t.Helper()
	cfg := governor.DefaultConfig()
	cfg.Window, cfg.DriftEvery, cfg.DriftMinWindow = 20, 5, 10 // drift within a few dozen actions
	now := time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	eng, err := governor.New(cfg, governor.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	for _, c := range []governor.Contract{
		{AgentID: "drifter", Scope: []string{"read", "delete"}},
		{AgentID: "calm", Scope: []string{"read"}},
	} {
		if err := eng.SetContract(c); err != nil {
			t.Fatalf("SetContract: %v", err)
		}
	}
	act := func(agent, typ, target string) {
		if _, err := eng.Evaluate(governor.Request{AgentID: agent, Action: governor.Action{Type: typ, Target: target}}); err != nil {
			t.Fatalf("Evaluate: %v", err)
		}
		now = now.Add(10 * time.Second)
	}
	for i := range 60 {
		if i < 40 {
			act("drifter", "read", "api.example.com/orders/1")
			act("calm", "read", "api.example.com/orders/1")
		} else {
			act("drifter", "delete", "api.example.com/users/2")
		}
	}
	serveWith := func(optimizer bool) string {
		s, err := admin.New(admin.Options{Governor: eng, Trajectory: trajectory.NewAnalyzer(trajectory.DefaultConfig(), optimizer), FleetBudget: time.Hour,
			Keys: []admin.Key{
				{Key: ctlOperatorKey, Principal: "cli-operator", Role: admin.RoleOperator},
				{Key: ctlViewerKey, Principal: "cli-viewer", Role: admin.RoleViewer},
			}})
		if err != nil {
			t.Fatalf("admin.New: %v", err)
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		return srv.URL
	}
	return trajectoryFixture{url: serveWith(false), optURL: serveWith(true), eng: eng}
}

// cli runs `vigil trajectory ARGS --server URL` with key in VIGIL_API_KEY.
func (f trajectoryFixture) cli(t *testing.T, url, key string, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, env(map[string]string{"VIGIL_API_KEY": key}), append(append([]string{"trajectory"}, args...), "--server", url)...)
}

// labelled returns the value of each "label  value" line of out.
func labelled(out string) map[string][]string {
	m := map[string][]string{}
	for l := range strings.SplitSeq(out, "\n") {
		label, value, ok := strings.Cut(l, "  ")
		if ok && label != "" && !strings.HasPrefix(l, " ") {
			m[label] = append(m[label], strings.TrimSpace(value))
		}
	}
	return m
}

func TestTrajectoryShow(t *testing.T) {
	f := newTrajectoryFixture(t)
	cases := []struct {
		name      string
		url       string
		optimizer bool
	}{
		{"optimizer off", f.url, false},
		{"optimizer on", f.optURL, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := f.cli(t, tc.url, ctlViewerKey, "show", "drifter", "--json")
			if code != exitOK {
				t.Fatalf("show --json: exit %d, stderr %s", code, errOut)
			}
			var tr wire.Trajectory
			if err := json.Unmarshal([]byte(out), &tr); err != nil || !strings.HasPrefix(out, "{\n  \"agent_id\"") {
				t.Fatalf("show --json: got %q (%v), want the trajectory indented", out, err)
			}
			if tr.RiskLevel == "low" || (tr.Policy != nil) != tc.optimizer {
				t.Errorf("trajectory: risk %s, policy %v; want a risk above low and a policy only with the optimizer", tr.RiskLevel, tr.Policy)
			}

			code, out, errOut = f.cli(t, tc.url, ctlViewerKey, "show", "drifter")
			if code != exitOK {
				t.Fatalf("show: exit %d, stderr %s", code, errOut)
			}
			got := labelled(out)
			last := tr.Observed[len(tr.Observed)-1]
			want := map[string]string{
				"agent":          "drifter",
				"risk":           tr.RiskLevel,
				"thresholds":     "low 0.1, moderate 0.2, high 0.4, critical 0.6",
				"observed":       strconv.Itoa(len(tr.Observed)) + " points, steps " + strconv.Itoa(tr.Observed[0].Step) + " to " + strconv.Itoa(last.Step),
				"recommendation": tr.Recommendation.Intervention + " (" + tr.Recommendation.Source + ")",
				"markers":        markerList(tr.Markers),
			}
			if tc.optimizer {
				want["policy"] = tr.Policy.Strategy
			} else {
				want["policy"] = "none: " + wire.OptimizerOffNote
			}
			for label, w := range want {
				if g := got[label]; len(g) != 1 || g[0] != w {
					t.Errorf("%s: got %q, want %q\n%s", label, g, w, out)
				}
			}
			if d := got["drift"]; len(d) != 1 || !strings.HasPrefix(d[0], fixed(last.Overall)+" overall (action ") {
				t.Errorf("drift: got %q, want the last observed %s first", d, fixed(last.Overall))
			}
			if strings.Contains(out, "decision tree:") != tc.optimizer || (len(got["expected cost"]) == 1) != tc.optimizer {
				t.Errorf("output %q: want a decision tree and costs only with the optimizer", out)
			}
		})
	}
}

func TestTrajectoryHistoryAndFleet(t *testing.T) {
	f := newTrajectoryFixture(t)
	history, _ := f.eng.DriftHistory("drifter")

	code, out, errOut := f.cli(t, f.url, ctlViewerKey, "history", "drifter")
	if code != exitOK {
		t.Fatalf("history: exit %d, stderr %s", code, errOut)
	}
	table, rest, _ := strings.Cut(out, "\n\n")
	lines := strings.Split(table, "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "STEP TIMESTAMP OVERALL ACTION TARGET TEMPORAL OUTCOME SEMANTIC CONFIDENCE" || len(lines) != len(history)+1 {
		t.Fatalf("history: got %q, want a header and %d lines", table, len(history))
	}
	for i, p := range history {
		fields := strings.Fields(lines[i+1])
		if len(fields) != 9 || fields[0] != strconv.Itoa(p.Step) || fields[1] != wire.Time(p.Time) || fields[2] != fixed(p.Drift.Overall) {
			t.Errorf("line %d: got %v, want step %d at %s, overall %s", i+1, fields, p.Step, wire.Time(p.Time), fixed(p.Drift.Overall))
		}
	}
	if !strings.HasPrefix(rest, "projected: overall ") || !strings.HasSuffix(rest, "interventions: none\n") {
		t.Errorf("after the table: got %q, want the projection and no interventions", rest)
	}

	for _, tc := range []struct {
		name      string
		url       string
		optimizer bool
	}{{"optimizer off", f.url, false}, {"optimizer on", f.optURL, true}} {
		t.Run("fleet "+tc.name, func(t *testing.T) {
			code, out, errOut := f.cli(t, tc.url, ctlViewerKey, "fleet")
			if code != exitOK {
				t.Fatalf("fleet: exit %d, stderr %s", code, errOut)
			}
			table, rest, _ := strings.Cut(out, "\n\n")
			lines := strings.Split(table, "\n")
			if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "AGENT RISK STRATEGY EXPECTED_COST POLICY_STATE" {
				t.Fatalf("fleet: got %q, want a header and 2 agents", table)
			}
			calm, drifter := strings.Fields(lines[1]), strings.Fields(lines[2])
			if calm[0] != "calm" || calm[1] != "low" || drifter[0] != "drifter" || drifter[1] == "low" {
				t.Errorf("agents: got %v and %v, want calm low and drifter above low", calm, drifter)
			}
			if got := drifter[2] == "-" && drifter[3] == "-"; got == tc.optimizer {
				t.Errorf("drifter: got strategy %s cost %s; want them only with the optimizer", drifter[2], drifter[3])
			}
			if want := map[bool]string{false: "-", true: "current"}[tc.optimizer]; drifter[4] != want || calm[4] != want {
				t.Errorf("policy states: got %s and %s, want %s", calm[4], drifter[4], want)
			}
			if !strings.HasPrefix(rest, "2 agents: 1 low, ") || strings.Contains(rest, "note: ") == tc.optimizer {
				t.Errorf("summary: got %q", rest)
			}
		})
	}
}

func TestWriteFleetPolicyStates(t *testing.T) {
	str := func(s string) *string { return &s }
	cost := func(x float64) *float64 { return &x }
	summary := wire.FleetSummary{Total: 3, Low: 1, Moderate: 1, High: 1}
	agents := []wire.FleetAgent{
		{AgentID: "a1", RiskLevel: "low", Strategy: str("no_op"), ExpectedCost: cost(0), PolicyState: str("current")},
		{AgentID: "a2", RiskLevel: "moderate", Strategy: str("graduated"), ExpectedCost: cost(31.7), PolicyState: str("stale")},
		{AgentID: "a3", RiskLevel: "high", PolicyState: str("pending")},
	}
	cases := []struct {
		name string
		f    wire.Fleet
		want string
	}{
		{"stale and pending", wire.Fleet{Agents: agents, Summary: summary, PolicyStates: &wire.FleetPolicyStates{Current: 1, Stale: 1, Pending: 1}, OptimizerEnabled: true},
			"AGENT  RISK      STRATEGY   EXPECTED_COST  POLICY_STATE\n" +
				"a1     low       no_op      0.00           current\n" +
				"a2     moderate  graduated  31.70          stale\n" +
				"a3     high      -          -              pending\n" +
				"\n3 agents: 1 low, 1 moderate, 1 high, 0 critical\n" +
				"note: 1 stale (from earlier drift) and 1 pending (not computed yet) of 3 policies are being recomputed: " +
				"run fleet again for them, or show AGENT for one agent's current policy\n"},
		{"all current", wire.Fleet{Agents: agents[:1], Summary: wire.FleetSummary{Total: 1, Low: 1}, PolicyStates: &wire.FleetPolicyStates{Current: 1}, OptimizerEnabled: true},
			"AGENT  RISK  STRATEGY  EXPECTED_COST  POLICY_STATE\n" +
				"a1     low   no_op     0.00           current\n" +
				"\n1 agents: 1 low, 0 moderate, 0 high, 0 critical\n"},
		{"optimizer off", wire.Fleet{Agents: []wire.FleetAgent{{AgentID: "a1", RiskLevel: "low"}}, Summary: wire.FleetSummary{Total: 1, Low: 1}, Note: wire.OptimizerOffNote},
			"AGENT  RISK  STRATEGY  EXPECTED_COST  POLICY_STATE\n" +
				"a1     low   -         -              -\n" +
				"\n1 agents: 1 low, 0 moderate, 0 high, 0 critical\n" +
				"note: " + wire.OptimizerOffNote + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := writeFleet(&out, tc.f); err != nil {
				t.Fatalf("writeFleet: %v", err)
			}
			if out.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}

func TestTrajectorySimulate(t *testing.T) {
	f := newTrajectoryFixture(t)
	code, out, errOut := f.cli(t, f.optURL, ctlOperatorKey, "simulate", "drifter", "--strategy", "graduated", "--horizon", "12")
	if code != exitOK {
		t.Fatalf("simulate: exit %d, stderr %s", code, errOut)
	}
	head, curve, _ := strings.Cut(out, "\n\n")
	got := labelled(head)
	if got["strategy"][0] != "graduated" || got["horizon"][0] != "12 observations (nothing applied)" || len(got["expected cost"]) != 1 || got["expected cost"][0] == "-" {
		t.Errorf("summary: got %q", head)
	}
	lines := strings.Split(strings.TrimSuffix(curve, "\n"), "\n")
	if len(lines) != 13 || strings.Join(strings.Fields(lines[0]), " ") != "STEP DRIFT" {
		t.Fatalf("curve: got %q, want a header and 12 points", curve)
	}
	for i, l := range lines[1:] {
		fields := strings.Fields(l)
		d, err := strconv.ParseFloat(fields[1], 64)
		if fields[0] != "+"+strconv.Itoa(i+1) || err != nil || d < 0 || d > 1 {
			t.Errorf("curve line %d: got %q, want +%d and a drift in [0, 1]", i+1, l, i+1)
		}
	}

	code, out, _ = f.cli(t, f.url, ctlOperatorKey, "simulate", "--json", "--horizon=3", "drifter", "--strategy=no_op")
	var sim wire.Simulation
	if code != exitOK || json.Unmarshal([]byte(out), &sim) != nil || len(sim.Curve) != 3 || sim.EstimatedTotalCost != nil || sim.Note == "" {
		t.Errorf("simulate --json without the optimizer: exit %d, got %q; want 3 points, no cost and a note", code, out)
	}
	code, out, _ = f.cli(t, f.url, ctlOperatorKey, "simulate", "drifter", "--strategy", "no_op", "--horizon", "3")
	if code != exitOK || !strings.Contains(out, "expected cost  none: "+wire.OptimizerOffNote+"\n") {
		t.Errorf("simulate without the optimizer: exit %d, got %q; want the note for the cost", code, out)
	}
}

func TestTrajectoryErrors(t *testing.T) {
	f := newTrajectoryFixture(t)
	for _, tc := range []struct {
		name, key string
		args      []string
		want      string
	}{
		{"unknown agent", ctlViewerKey, []string{"show", "nobody"}, `not_found: no agent "nobody"`},
		{"unknown agent's history", ctlViewerKey, []string{"history", "nobody"}, "not_found"},
		{"simulate an unknown agent", ctlOperatorKey, []string{"simulate", "nobody", "--strategy", "no_op", "--horizon", "5"}, "not_found"},
		{"viewer may not simulate", ctlViewerKey, []string{"simulate", "drifter", "--strategy", "no_op", "--horizon", "5"}, "forbidden"},
		{"no key", "", []string{"fleet"}, "unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := f.cli(t, f.url, tc.key, tc.args...)
			if code != exitFail || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage: vigil trajectory"},
		{"unknown command", []string{"plot"}, `unknown command "plot"`},
		{"show without agent", []string{"show"}, "want 1 argument (AGENT), got 0"},
		{"history with two agents", []string{"history", "a", "b"}, "want 1 argument (AGENT), got 2"},
		{"fleet with an argument", []string{"fleet", "drifter"}, "want no arguments"},
		{"strategy missing", []string{"simulate", "drifter", "--horizon", "5"}, "--strategy is required"},
		{"unknown strategy", []string{"simulate", "drifter", "--strategy", "panic", "--horizon", "5"}, "--strategy: want no_op"},
		{"horizon missing", []string{"simulate", "drifter", "--strategy", "no_op"}, "--horizon is required"},
		{"horizon 0", []string{"simulate", "drifter", "--strategy", "no_op", "--horizon", "0"}, "--horizon: want 1 to 1000, got 0"},
		{"horizon 1001", []string{"simulate", "drifter", "--strategy", "no_op", "--horizon", "1001"}, "--horizon: want 1 to 1000, got 1001"},
		{"horizon 2.5", []string{"simulate", "drifter", "--strategy", "no_op", "--horizon", "2.5"}, "invalid value \"2.5\" for flag -horizon"},
		{"show takes no strategy", []string{"show", "drifter", "--strategy", "no_op"}, "flag provided but not defined: -strategy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"trajectory"}, tc.args...)
			if tc.args != nil {
				args = append(args, "--server", f.url)
			}
			code, _, errOut := runCLI(t, env(nil), args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
	code, out, _ := runCLI(t, env(nil), "trajectory", "help")
	if code != exitOK || !strings.Contains(out, "simulate AGENT --strategy S --horizon N") {
		t.Errorf("help: exit %d, got %q", code, out)
	}
	code, out, _ = runCLI(t, env(nil), "help")
	if code != exitOK || !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(l, "  trajectory ") }) {
		t.Errorf("vigil help: got %q, want the trajectory command listed", out)
	}
}
