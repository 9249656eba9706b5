package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
)

const controlUsage = `Usage: vigil control <command> [flags] ARGS

Steer the fleet of a running server with directives (/v1/control/directives):

  issue --type TYPE [target] [parameters] [--reason R] [--duration D]
                            issue a directive; prints its id on the first
                            line, then the directive (JSON, indented)
  list [--json]             the active directives, one line each:
                            ID  TYPE  TARGETS  EXPIRES  REASON
  show ID                   one directive, active or expired (JSON, indented)
  expire ID                 expire a directive now and undo its effects;
                            prints its id, then the directive (JSON)

issue:
  --type TYPE          enforce, quarantine, release, tighten, relax, re_anchor
                       or broadcast_reminder (required)
  Target (at least one; criteria given together are ANDed):
  --agent ID           an agent id (repeat for several)
  --archetype A        agents of this archetype
  --team T             agents of this team
  --drift-status S     drifting (severity moderate or above) or critical
  Parameters (only those of the type):
  --factor F           tighten: multiply the drift thresholds by F (0 < F;
                       below 1 is stricter)
  --invariant 'NAME=EXPR'
                       enforce: a CEL expression over action that must hold
                       (repeat for several; EXPR starts after the first =)
  --term T             re_anchor: the instruction term to re-anchor
  --message M          broadcast_reminder: the advisory to deliver
  --reason R           why (recorded with the directive and its provenance)
  --duration D         how long it stays active: a Go duration (30m, 2h) or a
                       number of seconds; without it, until expired
  --operator O         act as operator O (only an admin key may name another
                       principal than its own)

Flags of every command:
  --server URL     admin API (default $VIGIL_SERVER, else http://127.0.0.1:8420)
  --api-key KEY    X-Api-Key (default $VIGIL_API_KEY); issue and expire need an
                   operator key, list and show a viewer key
  --timeout D      wait at most D for the server (default 30s)

Flags may come before or after the arguments; "--" ends the flags.

list shows one line per active directive, oldest first, aligned in columns
separated by at least two spaces: TARGETS are the agents it binds
(comma-separated, "-" for none), EXPIRES its expiry time or "never", and
REASON is last and may contain spaces.

Exit status: 0 success, 1 an error from or reaching the server (e.g. 409
control_plane_disabled, 404 for an unknown id), 2 a usage error.
`

// stringList is a flag that may be repeated.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// controlOptions are the flags of the control subcommands.
type controlOptions struct {
	typ, archetype, team, driftStatus string
	agents, invariants                stringList
	factor                            float64
	term, message, reason, operator   string
	duration                          string
	json                              bool
}

// controlMain runs `vigil control ...` and returns the exit status.
func controlMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd, fs, status, ok := subcommand("control", controlUsage, map[string]string{
		"issue":  "issue --type TYPE [--agent ID ...] [--archetype A] [--team T] [--drift-status S] [--factor F] [--invariant 'NAME=EXPR' ...] [--term T] [--message M] [--reason R] [--duration D] [--operator O]",
		"list":   "list [--json]",
		"show":   "show ID",
		"expire": "expire ID",
	}, args, stdout, stderr)
	if !ok {
		return status
	}
	var cf clientFlags
	cf.register(fs)
	var o controlOptions
	switch cmd {
	case "issue":
		o.register(fs)
	case "list":
		fs.BoolVar(&o.json, "json", false, "print the server's JSON answer (indented) instead of a table")
	}
	pos, set, status, ok := parseArgs(fs, args[1:])
	if !ok {
		return status
	}
	var err error
	usage := func(err error) int {
		fmt.Fprintf(stderr, "vigil control %s: %v\n", cmd, err)
		fs.Usage() // the command's synopsis and flags
		return exitUsage
	}
	var id string
	var body []byte
	switch cmd {
	case "issue", "list":
		if len(pos) != 0 {
			return usage(fmt.Errorf("want no arguments, got %q", pos))
		}
		if cmd == "issue" {
			if body, err = o.request(set); err != nil {
				return usage(err)
			}
		}
	default:
		if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
			return usage(fmt.Errorf("want 1 argument (ID), got %d", len(pos)))
		}
		id = pos[0]
	}
	client, err := cf.client(getenv)
	if err != nil {
		return reportError(stderr, err)
	}
	const base = "/v1/control/directives"
	switch cmd {
	case "issue":
		err = printDirectiveResult(ctx, client, http.MethodPost, base, body, stdout)
	case "expire":
		err = printDirectiveResult(ctx, client, http.MethodDelete, base+"/"+url.PathEscape(id), nil, stdout)
	case "show":
		var raw []byte
		if raw, err = client.getBytes(ctx, base+"/"+url.PathEscape(id), nil); err == nil {
			err = writeIndented(stdout, raw)
		}
	case "list":
		err = listDirectives(ctx, client, o.json, stdout)
	}
	if err != nil {
		return reportError(stderr, err)
	}
	return exitOK
}

func (o *controlOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.typ, "type", "", "directive `type`: enforce, quarantine, release, tighten, relax, re_anchor or broadcast_reminder (required)")
	fs.Var(&o.agents, "agent", "target an agent `id` (repeat for several)")
	fs.StringVar(&o.archetype, "archetype", "", "target the agents of this `archetype`")
	fs.StringVar(&o.team, "team", "", "target the agents of this `team`")
	fs.StringVar(&o.driftStatus, "drift-status", "", "target the agents whose drift `status` is drifting or critical")
	fs.Float64Var(&o.factor, "factor", 0, "tighten: multiply the drift thresholds by `F` (0 < F; below 1 is stricter)")
	fs.Var(&o.invariants, "invariant", "enforce: an invariant `NAME=EXPR` (CEL over action; repeat for several)")
	fs.StringVar(&o.term, "term", "", "re_anchor: the instruction `term` to re-anchor")
	fs.StringVar(&o.message, "message", "", "broadcast_reminder: the advisory `message`")
	fs.StringVar(&o.reason, "reason", "", "why the directive is issued")
	fs.StringVar(&o.duration, "duration", "", "how long it stays active: a Go `duration` (30m, 2h) or seconds; default until expired")
	fs.StringVar(&o.operator, "operator", "", "act as this `operator` (an admin key only, for another principal)")
}

// request builds the JSON body of POST /v1/control/directives from the
// flags (set names those given). Mistakes a client can see are usage
// errors; the rest the server judges.
func (o *controlOptions) request(set map[string]bool) ([]byte, error) {
	if o.typ == "" {
		return nil, errors.New("--type is required")
	}
	if _, err := controlplane.ParseType(o.typ); err != nil {
		return nil, fmt.Errorf("--type: %v", err)
	}
	req := wire.DirectiveRequest{Type: o.typ, Reason: o.reason, Operator: o.operator,
		Target: &wire.DirectiveTarget{AgentIDs: o.agents, Archetype: o.archetype, Team: o.team, DriftStatus: o.driftStatus}}
	if len(o.agents) == 0 && o.archetype == "" && o.team == "" && o.driftStatus == "" {
		return nil, errors.New("a target is required: --agent, --archetype, --team or --drift-status")
	}
	var p wire.DirectiveParameters
	if set["factor"] {
		p.Factor = &o.factor
	}
	for _, inv := range o.invariants {
		name, expr, ok := strings.Cut(inv, "=")
		if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(expr) == "" {
			return nil, fmt.Errorf("--invariant: want NAME=EXPR, got %q", inv)
		}
		p.Invariants = append(p.Invariants, wire.DirectiveInvariant{Name: strings.TrimSpace(name), Expr: expr})
	}
	if set["term"] {
		p.Term = &o.term
	}
	if set["message"] {
		p.Message = &o.message
	}
	if p.Factor != nil || p.Invariants != nil || p.Term != nil || p.Message != nil {
		req.Parameters = &p
	}
	if set["duration"] {
		secs, err := parseDurationSeconds(o.duration)
		if err != nil {
			return nil, err
		}
		req.DurationSeconds = &secs
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	return b, nil
}

// parseDurationSeconds reads --duration: a Go duration or a number of
// seconds, positive.
func parseDurationSeconds(s string) (float64, error) {
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d, derr := time.ParseDuration(s)
		if derr != nil {
			return 0, fmt.Errorf("--duration: want a duration such as 30m or 2h, or a number of seconds, got %q", s)
		}
		secs = d.Seconds()
	}
	if !(secs > 0) {
		return 0, fmt.Errorf("--duration: must be positive, got %q", s)
	}
	return secs, nil
}

// printDirectiveResult sends a request answered by {"success", "directive"}
// and prints the directive's id, then the directive indented.
func printDirectiveResult(ctx context.Context, c *apiClient, method, path string, body []byte, w io.Writer) error {
	raw, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	var res struct {
		Directive json.RawMessage `json:"directive"`
	}
	var d struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || json.Unmarshal(res.Directive, &d) != nil || d.ID == "" {
		return fmt.Errorf("the server's answer holds no directive: %s", bytes.TrimSpace(raw))
	}
	if _, err := fmt.Fprintln(w, d.ID); err != nil {
		return err
	}
	return writeIndented(w, res.Directive)
}

// listDirectives prints the active directives as a table (or the server's
// JSON).
func listDirectives(ctx context.Context, c *apiClient, asJSON bool, w io.Writer) error {
	raw, err := c.getBytes(ctx, "/v1/control/directives", nil)
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndented(w, raw)
	}
	var list wire.DirectiveList
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("decoding the directives: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tTARGETS\tEXPIRES\tREASON")
	for _, d := range list.Directives {
		expires := "never"
		if d.ExpiresAt != nil {
			expires = *d.ExpiresAt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(d.ID), cell(d.Type), cell(strings.Join(bound(d), ",")), cell(expires), cell(d.Reason))
	}
	return tw.Flush()
}

// bound returns the agents d binds: resolved minus released.
func bound(d wire.Directive) []string {
	released := map[string]bool{}
	for _, a := range d.ReleasedAgents {
		released[a] = true
	}
	var out []string
	for _, a := range d.ResolvedAgents {
		if !released[a] {
			out = append(out, a)
		}
	}
	return out
}

// send sends a request with an optional JSON body and returns the body of a
// 2xx answer; any other answer becomes an *apiError. It is bounded by the
// client's timeout.
func (c *apiClient) send(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.apiKey != "" {
		req.Header.Set("X-Api-Key", c.apiKey)
	}
	req.Header.Set("User-Agent", "vigil/"+version)
	res, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("cannot reach %s: %w", c.base, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", path, err)
	}
	if res.StatusCode/100 != 2 {
		return nil, decodeAPIError(res.StatusCode, b)
	}
	return b, nil
}
