package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/ledger"
)

const ledgerUsage = `Usage: vigil ledger <command> [flags] ARGS

Read and verify the behaviour ledger of a running server (GET /v1/ledger/...):

  latest AGENT              the agent's newest entry (JSON, indented)
  show AGENT SEQ            entry SEQ (JSON, indented)
  list AGENT                entries newest first, one summary line each
        [--verdict V]       only ALLOW, DENY, ESCALATE, MODIFY or SUSPEND
        [--limit N]         at most N entries (server default 50, at most 1000)
  trace AGENT SEQ           entry SEQ and the entries that caused it, summary lines
        [--depth N]         at most N entries (server default 10, at most 1000)
  narrative AGENT SEQ       the plain-text account of entry SEQ
  verify AGENT              verify the chain on the server; exit 0 only when intact
  export AGENT              the chain as JSON Lines, oldest first, to stdout
        [--out FILE]        to FILE instead (mode 0600, written only when complete)

Offline, no server:

  verify-file FILE          verify an export (JSON Lines) with the published hash
                            rule; exit 0 only when intact

Flags of every command but verify-file:
  --server URL     admin API (default $VIGIL_SERVER, else http://127.0.0.1:8420)
  --api-key KEY    X-Api-Key (default $VIGIL_API_KEY); a viewer key is enough
  --timeout D      wait at most D for the server (default 30s; export: for the
                   transfer to start)
  --json           list, trace, verify: print the server's JSON instead of text

Flags may come before or after the arguments; "--" ends the flags (for an
agent id that starts with "-").

Summary lines (list, trace): a header, then one line per entry with the columns
  SEQ  TIMESTAMP  VERDICT  UCS  TYPE  TARGET
separated by at least two spaces and aligned; UCS has three decimals; an empty
type or target is "-", control characters are shown as U+FFFD; TARGET is last
and may contain spaces.

verify and verify-file print one line:
  intact: agent AGENT, N entries, head SEQ HASH
  broken: agent AGENT: first invalid sequence SEQ: REASON

Exit status: 0 success (and an intact chain), 1 an error from or reaching the
server, or a broken chain, 2 a usage error (or an unreadable FILE).
`

// ledgerCommand is one `vigil ledger` subcommand: its synopsis, the names
// of its positional arguments, and what it does once they are parsed.
type ledgerCommand struct {
	synopsis string
	args     []string // "AGENT", "SEQ" or "FILE"
	offline  bool     // no server flags
	flags    func(fs *flag.FlagSet, o *ledgerOptions)
	run      func(ctx context.Context, lc *ledgerCall) (int, error)
}

// ledgerOptions are the subcommand flags.
type ledgerOptions struct {
	verdict string
	limit   int
	depth   int
	out     string
	json    bool
}

// ledgerCall is one parsed invocation.
type ledgerCall struct {
	opts   ledgerOptions
	agent  string
	seq    int64
	file   string
	client *apiClient
	stdout io.Writer
}

func jsonFlag(fs *flag.FlagSet, o *ledgerOptions) {
	fs.BoolVar(&o.json, "json", false, "print the server's JSON answer (indented) instead of text")
}

var ledgerCommands = map[string]ledgerCommand{
	"latest": {synopsis: "latest AGENT", args: []string{"AGENT"}, run: ledgerLatest},
	"show":   {synopsis: "show AGENT SEQ", args: []string{"AGENT", "SEQ"}, run: ledgerShow},
	"list": {synopsis: "list AGENT [--verdict V] [--limit N] [--json]", args: []string{"AGENT"}, run: ledgerList,
		flags: func(fs *flag.FlagSet, o *ledgerOptions) {
			fs.StringVar(&o.verdict, "verdict", "", "only entries with this `verdict`: ALLOW, DENY, ESCALATE, MODIFY or SUSPEND")
			fs.IntVar(&o.limit, "limit", 0, "at most `N` entries (server default 50, at most 1000)")
			jsonFlag(fs, o)
		}},
	"trace": {synopsis: "trace AGENT SEQ [--depth N] [--json]", args: []string{"AGENT", "SEQ"}, run: ledgerTrace,
		flags: func(fs *flag.FlagSet, o *ledgerOptions) {
			fs.IntVar(&o.depth, "depth", 0, "at most `N` entries (server default 10, at most 1000)")
			jsonFlag(fs, o)
		}},
	"narrative": {synopsis: "narrative AGENT SEQ", args: []string{"AGENT", "SEQ"}, run: ledgerNarrative},
	"verify":    {synopsis: "verify AGENT [--json]", args: []string{"AGENT"}, run: ledgerVerify, flags: jsonFlag},
	"export": {synopsis: "export AGENT [--out FILE]", args: []string{"AGENT"}, run: ledgerExport,
		flags: func(fs *flag.FlagSet, o *ledgerOptions) {
			fs.StringVar(&o.out, "out", "", "write to `FILE` (mode 0600, replaced only once the export is complete) instead of stdout")
		}},
	"verify-file": {synopsis: "verify-file FILE", args: []string{"FILE"}, offline: true, run: ledgerVerifyFile},
}

// ledgerVerdicts are the accepted values of --verdict.
var ledgerVerdicts = []string{"ALLOW", "DENY", "ESCALATE", "MODIFY", "SUSPEND"}

// ledgerMain runs `vigil ledger ...` and returns the exit status.
func ledgerMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, ledgerUsage)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, ledgerUsage)
		return exitOK
	}
	cmd, ok := ledgerCommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "vigil ledger: unknown command %q\n\n%s", args[0], ledgerUsage)
		return exitUsage
	}
	lc := &ledgerCall{stdout: stdout}
	fs := flag.NewFlagSet("vigil ledger "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: vigil ledger %s\n\nFlags (before or after the arguments):\n", cmd.synopsis)
		fs.PrintDefaults()
	}
	var cf clientFlags
	if !cmd.offline {
		cf.register(fs)
	}
	if cmd.flags != nil {
		cmd.flags(fs, &lc.opts)
	}
	pos, set, status, ok := parseArgs(fs, args[1:])
	if !ok {
		return status
	}
	var err error
	if err := lc.bind(cmd, pos, set); err != nil {
		fmt.Fprintf(stderr, "vigil ledger %s: %v\nUsage: vigil ledger %s\n", args[0], err, cmd.synopsis)
		return exitUsage
	}
	if !cmd.offline {
		if lc.client, err = cf.client(getenv); err != nil {
			return reportError(stderr, err)
		}
	}
	code, err := cmd.run(ctx, lc)
	if err != nil {
		return reportError(stderr, err)
	}
	return code
}

// bind checks the positional arguments and the flag values (set names the
// flags given on the command line).
func (lc *ledgerCall) bind(cmd ledgerCommand, pos []string, set map[string]bool) error {
	if len(pos) != len(cmd.args) {
		return fmt.Errorf("want %d argument(s) (%s), got %d", len(cmd.args), strings.Join(cmd.args, " "), len(pos))
	}
	for i, name := range cmd.args {
		v := pos[i]
		switch name {
		case "AGENT":
			if strings.TrimSpace(v) == "" {
				return errors.New("AGENT must not be empty")
			}
			lc.agent = v
		case "SEQ":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return fmt.Errorf("SEQ must be an integer from 1, got %q", v)
			}
			lc.seq = n
		case "FILE":
			if v == "" {
				return errors.New("FILE must not be empty")
			}
			lc.file = v
		}
	}
	o := &lc.opts
	if o.verdict != "" {
		o.verdict = strings.ToUpper(o.verdict)
		if !slices.Contains(ledgerVerdicts, o.verdict) {
			return fmt.Errorf("--verdict: want one of %s, got %q", strings.Join(ledgerVerdicts, ", "), o.verdict)
		}
	}
	if set["limit"] && o.limit < 1 {
		return fmt.Errorf("--limit: must be positive, got %d", o.limit)
	}
	if set["depth"] && o.depth < 1 {
		return fmt.Errorf("--depth: must be positive, got %d", o.depth)
	}
	if set["out"] && o.out == "" {
		return errors.New("--out: must name a file (or - for stdout)")
	}
	return nil
}

// path is the ledger route of the call's agent with the given suffix.
func (lc *ledgerCall) path(suffix ...string) string {
	p := "/v1/ledger/" + url.PathEscape(lc.agent)
	for _, s := range suffix {
		p += "/" + s
	}
	return p
}

func (lc *ledgerCall) seqString() string { return strconv.FormatInt(lc.seq, 10) }

func ledgerLatest(ctx context.Context, lc *ledgerCall) (int, error) {
	return printEntry(ctx, lc, lc.path("latest"))
}

func ledgerShow(ctx context.Context, lc *ledgerCall) (int, error) {
	return printEntry(ctx, lc, lc.path(lc.seqString()))
}

// printEntry prints the entry at path indented from the bytes received, so
// that the printed entry keeps the stored content (numbers and strings as
// they were hashed).
func printEntry(ctx context.Context, lc *ledgerCall, path string) (int, error) {
	raw, err := lc.client.getBytes(ctx, path, nil)
	if err != nil {
		return exitFail, err
	}
	if err := writeIndented(lc.stdout, raw); err != nil {
		return exitFail, err
	}
	return exitOK, nil
}

func writeIndented(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("the server's answer is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

func ledgerList(ctx context.Context, lc *ledgerCall) (int, error) {
	q := url.Values{}
	if lc.opts.verdict != "" {
		q.Set("verdict", lc.opts.verdict)
	}
	if lc.opts.limit > 0 {
		q.Set("limit", strconv.Itoa(lc.opts.limit))
	}
	raw, err := lc.client.getBytes(ctx, lc.path(), q)
	if err != nil {
		return exitFail, err
	}
	if lc.opts.json {
		return exitOK, writeIndented(lc.stdout, raw)
	}
	var body wire.LedgerEntries
	if err := json.Unmarshal(raw, &body); err != nil {
		return exitFail, fmt.Errorf("decoding the entries: %w", err)
	}
	return exitOK, writeSummary(lc.stdout, body.Entries)
}

func ledgerTrace(ctx context.Context, lc *ledgerCall) (int, error) {
	q := url.Values{}
	if lc.opts.depth > 0 {
		q.Set("depth", strconv.Itoa(lc.opts.depth))
	}
	raw, err := lc.client.getBytes(ctx, lc.path("trace", lc.seqString()), q)
	if err != nil {
		return exitFail, err
	}
	if lc.opts.json {
		return exitOK, writeIndented(lc.stdout, raw)
	}
	var body wire.LedgerTrace
	if err := json.Unmarshal(raw, &body); err != nil {
		return exitFail, fmt.Errorf("decoding the trace: %w", err)
	}
	return exitOK, writeSummary(lc.stdout, body.Chain)
}

// entrySummary is what a summary line shows of an entry.
type entrySummary struct {
	Sequence  int64  `json:"sequence"`
	Timestamp string `json:"timestamp"`
	Action    struct {
		Type   string `json:"type"`
		Target string `json:"target"`
	} `json:"action"`
	Verdict struct {
		Decision string  `json:"decision"`
		UCS      float64 `json:"ucs"`
	} `json:"verdict"`
}

// writeSummary writes the header and one aligned line per entry:
// SEQ  TIMESTAMP  VERDICT  UCS  TYPE  TARGET.
func writeSummary(w io.Writer, entries []json.RawMessage) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIMESTAMP\tVERDICT\tUCS\tTYPE\tTARGET")
	for i, raw := range entries {
		var e entrySummary
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("decoding entry %d of the answer: %w", i+1, err)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.3f\t%s\t%s\n", e.Sequence, cell(e.Timestamp), cell(e.Verdict.Decision),
			e.Verdict.UCS, cell(e.Action.Type), cell(e.Action.Target))
	}
	return tw.Flush()
}

// cell makes a value safe for one summary cell: "-" when empty, control
// characters (tabs and newlines included) replaced by U+FFFD.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

func ledgerNarrative(ctx context.Context, lc *ledgerCall) (int, error) {
	text, err := lc.client.getBytes(ctx, lc.path("narrative", lc.seqString()), nil)
	if err != nil {
		return exitFail, err
	}
	if _, err := lc.stdout.Write(text); err != nil {
		return exitFail, err
	}
	return exitOK, nil
}

func ledgerVerify(ctx context.Context, lc *ledgerCall) (int, error) {
	raw, err := lc.client.getBytes(ctx, lc.path("verify"), nil)
	if err != nil {
		return exitFail, err
	}
	var r wire.LedgerReport
	if err := json.Unmarshal(raw, &r); err != nil {
		return exitFail, fmt.Errorf("decoding the report: %w", err)
	}
	if lc.opts.json {
		err = writeIndented(lc.stdout, raw)
	} else {
		err = writeReport(lc.stdout, r)
	}
	if err != nil {
		return exitFail, err
	}
	if !r.Valid {
		return exitFail, nil
	}
	return exitOK, nil
}

// writeReport prints a verification report in one line (two for a broken
// chain with verified entries before the break).
func writeReport(w io.Writer, r wire.LedgerReport) error {
	var err error
	switch {
	case r.Valid && r.AgentID == "" && r.Entries == 0:
		_, err = fmt.Fprintln(w, "intact: empty export, 0 entries")
	case r.Valid:
		_, err = fmt.Fprintf(w, "intact: agent %s, %d entries, head %d %s\n", r.AgentID, r.Entries, r.HeadSequence, r.HeadHash)
	default:
		_, err = fmt.Fprintf(w, "broken: agent %s: first invalid sequence %d: %s\n", r.AgentID, r.FirstInvalidSequence, r.Reason)
		if err == nil && r.Entries > 0 {
			_, err = fmt.Fprintf(w, "verified before it: %d entries, head %d %s\n", r.Entries, r.HeadSequence, r.HeadHash)
		}
	}
	return err
}

func ledgerExport(ctx context.Context, lc *ledgerCall) (int, error) {
	path := lc.path("export")
	if lc.opts.out == "" || lc.opts.out == "-" {
		if _, err := lc.client.stream(ctx, path, lc.stdout); err != nil {
			return exitFail, err
		}
		return exitOK, nil
	}
	return exitOK, exportToFile(ctx, lc.client, path, lc.opts.out)
}

// exportToFile streams the export into a temporary file (mode 0600) next to
// out and renames it to out once it is complete and synced, so that out
// never holds a partial chain.
func exportToFile(ctx context.Context, c *apiClient, path, out string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if _, err := c.stream(ctx, path, tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// ledgerVerifyFile verifies an export offline (ledger.VerifyStream): exit 0
// when intact, 1 when broken, 2 when the file cannot be read.
func ledgerVerifyFile(_ context.Context, lc *ledgerCall) (int, error) {
	f, err := os.Open(lc.file)
	if err != nil {
		return exitUsage, &usageError{msg: err.Error()}
	}
	defer f.Close()
	r, err := ledger.VerifyStream(f)
	if err != nil && !errors.Is(err, ledger.ErrChainBroken) {
		return exitUsage, &usageError{msg: fmt.Sprintf("cannot read %s: %v", lc.file, err)}
	}
	if err := writeReport(lc.stdout, wire.NewLedgerReport(r)); err != nil {
		return exitFail, err
	}
	if !r.Valid {
		return exitFail, nil
	}
	return exitOK, nil
}
