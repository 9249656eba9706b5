package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor/trajectory"
)

const trajectoryUsage = `Usage: vigil trajectory <command> [flags] ARGS

Read where agents' drift is heading and what the policy optimizer plans
about it, from a running server (/v1/trajectory), and simulate a strategy.

  show AGENT                the agent's risk level, drift, velocity,
                            thresholds, markers, recommendation and, with
                            the optimizer on, its policy and decision tree
  history AGENT             the drift recomputations, oldest first, one
                            line each:
                            STEP  TIMESTAMP  OVERALL  ACTION  TARGET
                            TEMPORAL  OUTCOME  SEMANTIC  CONFIDENCE
                            then the projection and the past interventions
  fleet                     every agent, one line each:
                            AGENT  RISK  STRATEGY  EXPECTED_COST
                            POLICY_STATE
                            then the number of agents per risk level
  simulate AGENT --strategy S --horizon N
                            run strategy S over N observations from the
                            agent's current drift: the mean drift after
                            each step, where the strategy intervenes and
                            its expected cost. Nothing is applied.

simulate:
  --strategy S     no_op, early_advisory, wait_and_throttle,
                   immediate_escalate or graduated (required)
  --horizon N      observations to simulate, 1 to 1000 (required)

Flags of every command:
  --json           print the server's JSON answer (indented) instead
  --server URL     admin API (default $VIGIL_SERVER, else http://127.0.0.1:8420)
  --api-key KEY    X-Api-Key (default $VIGIL_API_KEY); simulate needs an
                   operator key, the others a viewer key
  --timeout D      wait at most D for the server (default 30s)

Flags may come before or after the arguments; "--" ends the flags.

Steps are observation counts: the drift history, the projection and the
markers are on the agent's own axis; a policy's schedule and a simulated
curve count from now (+0 is now). With the optimizer off
(runtime.enable_optimizer: false) there are no policies or costs: show and
simulate say so ("none: ..."), fleet prints "-" and a note.

The fleet view answers at once with the policies the server has: each is
current (from the agent's current drift and thresholds), stale (the
agent's last policy, from earlier drift: its strategy and cost are shown)
or pending (none yet: "-"). The server recomputes the others in the
background, and fleet says how many there are in a note; show AGENT always
computes the agent's current policy.

Exit status: 0 success, 1 an error from or reaching the server (e.g. 404
for an unknown agent, 403 for simulate with a viewer key), 2 a usage error.
`

// maxHorizon is the largest horizon of simulate (as the server's).
const maxHorizon = 1000

// trajectoryOptions are the flags of the trajectory subcommands.
type trajectoryOptions struct {
	json     bool
	strategy string
	horizon  int
}

// trajectoryMain runs `vigil trajectory ...` and returns the exit status.
func trajectoryMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd, fs, status, ok := subcommand("trajectory", trajectoryUsage, map[string]string{
		"show":     "show AGENT [--json]",
		"history":  "history AGENT [--json]",
		"fleet":    "fleet [--json]",
		"simulate": "simulate AGENT --strategy S --horizon N [--json]",
	}, args, stdout, stderr)
	if !ok {
		return status
	}
	var cf clientFlags
	cf.register(fs)
	var o trajectoryOptions
	fs.BoolVar(&o.json, "json", false, "print the server's JSON answer (indented) instead of text")
	if cmd == "simulate" {
		fs.StringVar(&o.strategy, "strategy", "", "the `strategy`: no_op, early_advisory, wait_and_throttle, immediate_escalate or graduated (required)")
		fs.IntVar(&o.horizon, "horizon", 0, "observations to simulate, `N` from 1 to 1000 (required)")
	}
	pos, set, status, ok := parseArgs(fs, args[1:])
	if !ok {
		return status
	}
	var err error
	usage := func(err error) int {
		fmt.Fprintf(stderr, "vigil trajectory %s: %v\n", cmd, err)
		fs.Usage()
		return exitUsage
	}
	var agent string
	var body []byte
	if cmd == "fleet" {
		if len(pos) != 0 {
			return usage(fmt.Errorf("want no arguments, got %q", pos))
		}
	} else {
		if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
			return usage(fmt.Errorf("want 1 argument (AGENT), got %d", len(pos)))
		}
		agent = pos[0]
	}
	if cmd == "simulate" {
		if body, err = o.simulateRequest(agent, set); err != nil {
			return usage(err)
		}
	}
	client, err := cf.client(getenv)
	if err != nil {
		return reportError(stderr, err)
	}
	var raw []byte
	switch cmd {
	case "show":
		raw, err = client.getBytes(ctx, "/v1/trajectory/"+url.PathEscape(agent), nil)
	case "history":
		raw, err = client.getBytes(ctx, "/v1/trajectory/"+url.PathEscape(agent)+"/history", nil)
	case "fleet":
		raw, err = client.getBytes(ctx, "/v1/trajectory/fleet", nil)
	case "simulate":
		raw, err = client.send(ctx, http.MethodPost, "/v1/trajectory/simulate", body)
	}
	if err == nil {
		if o.json {
			err = writeIndented(stdout, raw)
		} else {
			err = printTrajectoryAnswer(cmd, raw, stdout)
		}
	}
	if err != nil {
		return reportError(stderr, err)
	}
	return exitOK
}

// simulateRequest checks --strategy and --horizon (set names the flags
// given) and builds the body of POST /v1/trajectory/simulate.
func (o *trajectoryOptions) simulateRequest(agent string, set map[string]bool) ([]byte, error) {
	if !set["strategy"] {
		return nil, errors.New("--strategy is required")
	}
	if _, err := trajectory.ParseStrategy(o.strategy); err != nil {
		return nil, fmt.Errorf("--strategy: want no_op, early_advisory, wait_and_throttle, immediate_escalate or graduated, got %q", o.strategy)
	}
	if !set["horizon"] {
		return nil, errors.New("--horizon is required")
	}
	if o.horizon < 1 || o.horizon > maxHorizon {
		return nil, fmt.Errorf("--horizon: want 1 to %d, got %d", maxHorizon, o.horizon)
	}
	h := o.horizon
	b, err := json.Marshal(wire.SimulateRequest{AgentID: agent, Strategy: o.strategy, Horizon: &h})
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return b, nil
}

// printTrajectoryAnswer prints the server's answer to cmd as text.
func printTrajectoryAnswer(cmd string, raw []byte, w io.Writer) error {
	var v any
	var write func(io.Writer) error
	switch cmd {
	case "show":
		var t wire.Trajectory
		v, write = &t, func(w io.Writer) error { return writeTrajectory(w, t) }
	case "history":
		var h wire.TrajectoryHistory
		v, write = &h, func(w io.Writer) error { return writeTrajectoryHistory(w, h) }
	case "fleet":
		var f wire.Fleet
		v, write = &f, func(w io.Writer) error { return writeFleet(w, f) }
	default:
		var s wire.Simulation
		v, write = &s, func(w io.Writer) error { return writeSimulation(w, s) }
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	return write(w)
}

// writeTrajectory prints an agent's trajectory as labelled lines.
func writeTrajectory(w io.Writer, t wire.Trajectory) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", label, fmt.Sprintf(format, args...))
	}
	line("agent", "%s", cell(t.AgentID))
	line("risk", "%s", cell(t.RiskLevel))
	c := t.Current
	line("drift", "%s overall (action %s, target %s, temporal %s, outcome %s, semantic %s)",
		fixed(c.Overall), fixed(c.Action), fixed(c.Target), fixed(c.Temporal), fixed(c.Outcome), fixed(c.Semantic))
	line("velocity", "%s per observation overall", signed(t.Velocity.Overall))
	th := t.Thresholds
	line("thresholds", "low %s, moderate %s, high %s, critical %s", short(th.Low), short(th.Moderate), short(th.High), short(th.Critical))
	if n := len(t.Observed); n > 0 {
		line("observed", "%d points, steps %d to %d", n, t.Observed[0].Step, t.Observed[n-1].Step)
	} else {
		line("observed", "none yet")
	}
	if n := len(t.Projected); n > 0 {
		line("projected", "%s at step %d, %s at step %d", fixed(t.Projected[0].Overall), t.Projected[0].Step, fixed(t.Projected[n-1].Overall), t.Projected[n-1].Step)
	}
	line("markers", "%s", markerList(t.Markers))
	line("recommendation", "%s (%s)", cell(t.Recommendation.Intervention), cell(t.Recommendation.Source))
	p := t.Policy
	if p == nil {
		line("policy", "none: %s", noteOr(t.Note, "the server sent no policy"))
		return tw.Flush()
	}
	line("policy", "%s", cell(p.Strategy))
	line("expected cost", "%s (interventions %s, violations %s), confidence %s",
		money(p.ExpectedCost.Total), money(p.ExpectedCost.Intervention), money(p.ExpectedCost.Violation), money(p.Confidence))
	line("versus naive", "immediate_escalate %s: savings %.1f%%", money(p.Comparison.NaiveCost), p.Comparison.SavingsPercent)
	sched := make([]string, len(p.Schedule))
	for i, s := range p.Schedule {
		sched[i] = fmt.Sprintf("%s at +%d", cell(s.Intervention), s.Step)
	}
	if len(sched) == 0 {
		sched = []string{"no intervention"}
	}
	line("schedule", "%s", strings.Join(sched, ", "))
	for _, c := range p.Conditions {
		line("condition", "if %s then %s", cell(c.If), cell(c.Then))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "decision tree:")
	for l := range strings.SplitSeq(p.DecisionTree, "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	return nil
}

// writeTrajectoryHistory prints the drift recomputations as a table, then
// the projection and the past interventions.
func writeTrajectoryHistory(w io.Writer, h wire.TrajectoryHistory) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tTIMESTAMP\tOVERALL\tACTION\tTARGET\tTEMPORAL\tOUTCOME\tSEMANTIC\tCONFIDENCE")
	for _, d := range h.Drift {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Step, cell(d.Timestamp), fixed(d.Overall), fixed(d.Action),
			fixed(d.Target), fixed(d.Temporal), fixed(d.Outcome), fixed(d.Semantic), fixed(d.Confidence))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(h.Projections); n > 0 {
		fmt.Fprintf(w, "\nprojected: overall %s at step %d, %s at step %d\n",
			fixed(h.Projections[0].Overall), h.Projections[0].Step, fixed(h.Projections[n-1].Overall), h.Projections[n-1].Step)
	}
	if len(h.Interventions) == 0 {
		_, err := fmt.Fprintln(w, "\ninterventions: none")
		return err
	}
	fmt.Fprintln(w, "\ninterventions:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIMESTAMP\tTYPE\tAPPLIED\tREASON")
	for _, iv := range h.Interventions {
		at := "-"
		if iv.Timestamp != nil {
			at = cell(*iv.Timestamp)
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\n", at, cell(iv.Type), iv.Applied, cell(iv.Reason))
	}
	return tw.Flush()
}

// writeFleet prints one line per agent, then the count per risk level and
// a note when some policies are stale or pending.
func writeFleet(w io.Writer, f wire.Fleet) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tRISK\tSTRATEGY\tEXPECTED_COST\tPOLICY_STATE")
	for _, a := range f.Agents {
		strategy, cost, state := "-", "-", "-"
		if a.Strategy != nil {
			strategy = cell(*a.Strategy)
		}
		if a.ExpectedCost != nil {
			cost = money(*a.ExpectedCost)
		}
		if a.PolicyState != nil {
			state = cell(*a.PolicyState)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(a.AgentID), cell(a.RiskLevel), strategy, cost, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := f.Summary
	fmt.Fprintf(w, "\n%d agents: %d low, %d moderate, %d high, %d critical\n", s.Total, s.Low, s.Moderate, s.High, s.Critical)
	if ps := f.PolicyStates; ps != nil && ps.Stale+ps.Pending > 0 {
		fmt.Fprintf(w, "note: %d stale (from earlier drift) and %d pending (not computed yet) of %d policies are being recomputed: "+
			"run fleet again for them, or show AGENT for one agent's current policy\n", ps.Stale, ps.Pending, ps.Current+ps.Stale+ps.Pending)
	}
	if f.Note != "" {
		fmt.Fprintf(w, "note: %s\n", f.Note)
	}
	return nil
}

// writeSimulation prints the simulation's summary, then its curve.
func writeSimulation(w io.Writer, s wire.Simulation) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", label, fmt.Sprintf(format, args...))
	}
	line("agent", "%s", cell(s.AgentID))
	line("strategy", "%s", cell(s.Strategy))
	line("horizon", "%d observations (nothing applied)", s.Horizon)
	line("start", "drift %s, velocity %s per observation", fixed(s.CurrentDrift), signed(s.CurrentVelocity))
	if s.EstimatedTotalCost != nil {
		line("expected cost", "%s", money(*s.EstimatedTotalCost))
	} else {
		line("expected cost", "none: %s", noteOr(s.Note, "the server sent no cost"))
	}
	line("markers", "%s", markerList(s.Markers))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tDRIFT")
	for _, p := range s.Curve {
		fmt.Fprintf(tw, "+%d\t%s\n", p.Step, fixed(p.Drift))
	}
	return tw.Flush()
}

// markerList renders markers as "advisory at 70 (planned), ...", "none"
// for none.
func markerList(ms []wire.TrajectoryMarker) string {
	if len(ms) == 0 {
		return "none"
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		kind := "past"
		if m.Planned {
			kind = "planned"
		}
		parts[i] = fmt.Sprintf("%s at %d (%s)", cell(m.Type), m.Step, kind)
	}
	return strings.Join(parts, ", ")
}

// noteOr returns note, or alt when the server sent none.
func noteOr(note, alt string) string {
	if note == "" {
		return alt
	}
	return cell(note)
}

// fixed formats a drift with three decimals.
func fixed(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// signed formats a velocity with its sign and four significant digits.
func signed(x float64) string {
	s := strconv.FormatFloat(x, 'g', 4, 64)
	if x >= 0 {
		s = "+" + s
	}
	return s
}

// short formats a threshold as briefly as it is exact.
func short(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// money formats a cost with two decimals.
func money(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
