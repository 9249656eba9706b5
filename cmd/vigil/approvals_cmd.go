package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
)

const approvalsUsage = `Usage: vigil approvals <command> [flags] ARGS

Review the override queue of a running server (/v1/approvals): escalated
actions held for a human.

  list [--status S] [--limit N] [--json]
                            the approvals, newest first, one line each:
                            ID  STATUS  AGENT  ACTION  TARGET  CREATED  REASON
  approve ID [--reason R]   approve a pending approval: the identical action
                            may pass once within 10 minutes; prints its id,
                            then the approval (JSON, indented)
  deny ID [--reason R]      deny a pending approval (a retry escalates
                            again); prints its id, then the approval

list:
  --status S       only pending, approved, denied or expired approvals
                   (default: every status)
  --limit N        at most N approvals (default 50; above 1000 means 1000)
  --json           print the server's JSON answer (indented) instead of a table

approve and deny:
  --reason R       why (recorded with the approval and its provenance event)
  --operator O     decide as operator O (only an admin key may name another
                   principal than its own)

Flags of every command:
  --server URL     admin API (default $VIGIL_SERVER, else http://127.0.0.1:8420)
  --api-key KEY    X-Api-Key (default $VIGIL_API_KEY); approve and deny need an
                   operator key, list a viewer key
  --timeout D      wait at most D for the server (default 30s)

Flags may come before or after the arguments; "--" ends the flags.

list shows one line per approval, aligned in columns separated by at least
two spaces: ACTION is the action's type, CREATED when it was held, and
REASON — why it was held — is last and may contain spaces.

Exit status: 0 success, 1 an error from or reaching the server (e.g. 409
conflict for an approval already decided or expired, 404 for an unknown id,
409 control_plane_disabled), 2 a usage error.
`

// approvalsOptions are the flags of the approvals subcommands.
type approvalsOptions struct {
	status           string
	limit            int
	json             bool
	reason, operator string
}

// approvalsMain runs `vigil approvals ...` and returns the exit status.
func approvalsMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd, fs, status, ok := subcommand("approvals", approvalsUsage, map[string]string{
		"list":    "list [--status S] [--limit N] [--json]",
		"approve": "approve ID [--reason R] [--operator O]",
		"deny":    "deny ID [--reason R] [--operator O]",
	}, args, stdout, stderr)
	if !ok {
		return status
	}
	var cf clientFlags
	cf.register(fs)
	var o approvalsOptions
	if cmd == "list" {
		fs.StringVar(&o.status, "status", "", "only approvals with this `status`: pending, approved, denied or expired")
		fs.IntVar(&o.limit, "limit", 0, "at most `N` approvals (default 50 on the server; above 1000 means 1000)")
		fs.BoolVar(&o.json, "json", false, "print the server's JSON answer (indented) instead of a table")
	} else {
		fs.StringVar(&o.reason, "reason", "", "why the approval is "+map[string]string{"approve": "approved", "deny": "denied"}[cmd])
		fs.StringVar(&o.operator, "operator", "", "decide as this `operator` (an admin key only, for another principal)")
	}
	pos, set, status, ok := parseArgs(fs, args[1:])
	if !ok {
		return status
	}
	var err error
	usage := func(err error) int {
		fmt.Fprintf(stderr, "vigil approvals %s: %v\n", cmd, err)
		fs.Usage() // the command's synopsis and flags
		return exitUsage
	}
	var query url.Values
	var id string
	var body []byte
	if cmd == "list" {
		if len(pos) != 0 {
			return usage(fmt.Errorf("want no arguments, got %q", pos))
		}
		if query, err = o.listQuery(set); err != nil {
			return usage(err)
		}
	} else {
		if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
			return usage(fmt.Errorf("want 1 argument (ID), got %d", len(pos)))
		}
		id = pos[0]
		if body, err = json.Marshal(wire.ApprovalDecision{Reason: o.reason, Operator: o.operator}); err != nil {
			return reportError(stderr, fmt.Errorf("encoding the request: %w", err))
		}
	}
	client, err := cf.client(getenv)
	if err != nil {
		return reportError(stderr, err)
	}
	if cmd == "list" {
		err = listApprovals(ctx, client, query, o.json, stdout)
	} else {
		err = printApproval(ctx, client, "/v1/approvals/"+url.PathEscape(id)+"/"+cmd, body, stdout)
	}
	if err != nil {
		return reportError(stderr, err)
	}
	return exitOK
}

// listQuery builds the query of GET /v1/approvals from the flags (set names
// those given).
func (o *approvalsOptions) listQuery(set map[string]bool) (url.Values, error) {
	q := url.Values{}
	if set["status"] {
		if !controlplane.ValidApprovalStatus(o.status) {
			return nil, fmt.Errorf("--status: want pending, approved, denied or expired, got %q", o.status)
		}
		q.Set("status", o.status)
	}
	if set["limit"] {
		if o.limit < 1 {
			return nil, fmt.Errorf("--limit: must be positive, got %d", o.limit)
		}
		q.Set("limit", strconv.Itoa(o.limit))
	}
	return q, nil
}

// printApproval posts a decision and prints the approval's id, then the
// approval indented.
func printApproval(ctx context.Context, c *apiClient, path string, body []byte, w io.Writer) error {
	raw, err := c.send(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	var a struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || a.ID == "" {
		return fmt.Errorf("the server's answer holds no approval: %s", bytes.TrimSpace(raw))
	}
	if _, err := fmt.Fprintln(w, a.ID); err != nil {
		return err
	}
	return writeIndented(w, raw)
}

// listApprovals prints the approvals as a table (or the server's JSON).
func listApprovals(ctx context.Context, c *apiClient, query url.Values, asJSON bool, w io.Writer) error {
	raw, err := c.getBytes(ctx, "/v1/approvals", query)
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndented(w, raw)
	}
	var list wire.ApprovalList
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("decoding the approvals: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tACTION\tTARGET\tCREATED\tREASON")
	for _, a := range list.Approvals {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(a.ID), cell(a.Status), cell(a.AgentID), cell(a.Action.Type),
			cell(a.Action.Target), cell(a.CreatedAt), cell(a.Reason))
	}
	return tw.Flush()
}
