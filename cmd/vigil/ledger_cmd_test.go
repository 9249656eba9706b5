package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/ledger"
)

const cliTestKey = "cli-viewer-key"

// cliFixture is a real admin server with a real ledger in which agent "bot"
// has entries 1..6 (ALLOW, DENY, ALLOW, DENY, ALLOW, DENY) and agent
// "quiet" is configured without entries.
type cliFixture struct {
	url string
	l   *ledger.Ledger
	dir string
}

func newCLIFixture(t *testing.T) cliFixture {
	t.Helper()
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	for _, c := range []governor.Contract{
		{AgentID: "bot", Scope: []string{"read"}, Boundaries: []string{"api.example.com/*"}},
		{AgentID: "quiet", Scope: []string{"read"}},
	} {
		if err := eng.SetContract(c); err != nil {
			t.Fatalf("SetContract: %v", err)
		}
	}
	st, err := ledger.OpenFileStore(t.TempDir(), ledger.FileOptions{})
	if err != nil {
		t.Fatalf("OpenFileStore: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	l := ledger.New(st)
	for i := range 6 {
		typ := "read"
		if i%2 == 1 {
			typ = "delete"
		}
		d, err := eng.Evaluate(governor.Request{AgentID: "bot", Action: governor.Action{Type: typ, Target: "api.example.com/orders/42", Source: "api"}})
		if err != nil {
			t.Fatalf("Evaluate: %v", err)
		}
		if _, err := l.Append(context.Background(), d); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	return cliFixture{url: serveAdmin(t, eng, l), l: l, dir: t.TempDir()}
}

// serveAdmin serves the real admin handler over l with one viewer key.
func serveAdmin(t *testing.T, eng *governor.Engine, l *ledger.Ledger) string {
	t.Helper()
	s, err := admin.New(admin.Options{Governor: eng, Ledger: l,
		Keys: []admin.Key{{Key: cliTestKey, Principal: "cli-test", Role: admin.RoleViewer}}})
	if err != nil {
		t.Fatalf("admin.New: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f cliFixture) stored(t *testing.T, seq int64) *ledger.Record {
	t.Helper()
	rec, err := f.l.Get(context.Background(), "bot", seq)
	if err != nil {
		t.Fatalf("Get(%d): %v", seq, err)
	}
	return rec
}

// env is a getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// runCLI runs the vigil command line and returns its exit status and output.
func runCLI(t *testing.T, getenv func(string) string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb, getenv)
	return code, out.String(), errb.String()
}

func indented(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		t.Fatalf("Indent: %v", err)
	}
	return b.String() + "\n"
}

// summarySeqs returns the SEQ column of summary output, checking the header.
func summarySeqs(t *testing.T, out string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "SEQ TIMESTAMP VERDICT UCS TYPE TARGET" {
		t.Fatalf("header: got %q, want SEQ TIMESTAMP VERDICT UCS TYPE TARGET", lines[0])
	}
	var seqs []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 6 {
			t.Fatalf("line %q: got %d columns, want 6", l, len(f))
		}
		seqs = append(seqs, f[0])
	}
	return seqs
}

func TestLedgerCommands(t *testing.T) {
	f := newCLIFixture(t)
	getenv := env(map[string]string{"VIGIL_SERVER": f.url, "VIGIL_API_KEY": cliTestKey})
	head := f.stored(t, 6)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, stdout string)
	}{
		{"latest", []string{"latest", "bot"}, func(t *testing.T, out string) {
			if want := indented(t, head.JSON()); out != want {
				t.Errorf("stdout: got\n%s\nwant\n%s", out, want)
			}
		}},
		{"show", []string{"show", "bot", "2"}, func(t *testing.T, out string) {
			if want := indented(t, f.stored(t, 2).JSON()); out != want {
				t.Errorf("stdout: got\n%s\nwant\n%s", out, want)
			}
		}},
		{"list", []string{"list", "bot"}, func(t *testing.T, out string) {
			if got := strings.Join(summarySeqs(t, out), ","); got != "6,5,4,3,2,1" {
				t.Errorf("sequences: got %s, want 6,5,4,3,2,1", got)
			}
		}},
		{"list flags after", []string{"list", "bot", "--verdict", "deny", "--limit", "2"}, func(t *testing.T, out string) {
			if got := strings.Join(summarySeqs(t, out), ","); got != "6,4" {
				t.Errorf("sequences: got %s, want 6,4", got)
			}
			if !strings.Contains(out, "DENY") || strings.Contains(out, "ALLOW") {
				t.Errorf("stdout: got\n%s\nwant DENY lines only", out)
			}
		}},
		{"list flags before", []string{"list", "--limit=1", "--verdict=ALLOW", "bot"}, func(t *testing.T, out string) {
			if got := strings.Join(summarySeqs(t, out), ","); got != "5" {
				t.Errorf("sequences: got %s, want 5", got)
			}
		}},
		{"list json", []string{"list", "bot", "--json", "--limit", "3"}, func(t *testing.T, out string) {
			var body struct {
				AgentID string            `json:"agent_id"`
				Entries []json.RawMessage `json:"entries"`
			}
			if err := json.Unmarshal([]byte(out), &body); err != nil || body.AgentID != "bot" || len(body.Entries) != 3 {
				t.Errorf("stdout: got %s (%v), want the JSON answer with 3 entries", out, err)
			}
		}},
		{"list known agent without entries", []string{"list", "quiet"}, func(t *testing.T, out string) {
			if seqs := summarySeqs(t, out); len(seqs) != 0 {
				t.Errorf("sequences: got %v, want none", seqs)
			}
		}},
		{"trace", []string{"trace", "bot", "4", "--depth", "1"}, func(t *testing.T, out string) {
			if got := strings.Join(summarySeqs(t, out), ","); got != "4" {
				t.Errorf("sequences: got %s, want 4", got)
			}
		}},
		{"narrative", []string{"narrative", "bot", "2"}, func(t *testing.T, out string) {
			e, err := ledger.Decode(f.stored(t, 2))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if want := ledger.Narrative(e); out != want {
				t.Errorf("stdout: got\n%s\nwant\n%s", out, want)
			}
		}},
		{"verify", []string{"verify", "bot"}, func(t *testing.T, out string) {
			if want := "intact: agent bot, 6 entries, head 6 " + head.Hash + "\n"; out != want {
				t.Errorf("stdout: got %q, want %q", out, want)
			}
		}},
		{"verify known agent without entries", []string{"verify", "quiet"}, func(t *testing.T, out string) {
			if want := "intact: agent quiet, 0 entries, head 0 " + ledger.ZeroHash + "\n"; out != want {
				t.Errorf("stdout: got %q, want %q", out, want)
			}
		}},
		{"export", []string{"export", "bot"}, func(t *testing.T, out string) {
			r, err := ledger.VerifyStream(strings.NewReader(out))
			if err != nil || !r.Valid || r.Entries != 6 || r.HeadHash != head.Hash {
				t.Errorf("VerifyStream: got %+v, %v, want intact with 6 entries", r, err)
			}
		}},
		{"explicit server and key flags", []string{"latest", "--server", f.url + "/", "--api-key", cliTestKey, "bot"}, func(t *testing.T, out string) {
			if want := indented(t, head.JSON()); out != want {
				t.Errorf("stdout: got\n%s\nwant the latest entry", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, getenv, append([]string{"ledger"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit: got %d, want 0 (stderr %q)", code, errs)
			}
			if errs != "" {
				t.Errorf("stderr: got %q, want nothing", errs)
			}
			tt.check(t, out)
		})
	}
}

func TestLedgerCommandErrors(t *testing.T) {
	f := newCLIFixture(t)
	getenv := env(map[string]string{"VIGIL_SERVER": f.url, "VIGIL_API_KEY": cliTestKey})
	tests := []struct {
		name       string
		getenv     func(string) string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"unknown agent", getenv, []string{"show", "ghost", "1"}, 1, `vigil: not_found: no agent "ghost"`},
		{"agent id is escaped", getenv, []string{"latest", "a?b#c"}, 1, `vigil: not_found: no agent "a?b#c"`},
		{"missing sequence", getenv, []string{"show", "bot", "99"}, 1, `vigil: not_found: agent "bot" has no ledger entry 99`},
		{"no entries", getenv, []string{"latest", "quiet"}, 1, "vigil: not_found:"},
		{"no key", env(map[string]string{"VIGIL_SERVER": f.url}), []string{"latest", "bot"}, 1, "vigil: unauthenticated: missing X-Api-Key header"},
		{"wrong key", getenv, []string{"latest", "bot", "--api-key", "nope"}, 1, "vigil: unauthenticated: unknown API key"},
		{"unreachable server", nil, []string{"latest", "bot", "--server", "http://127.0.0.1:1", "--timeout", "2s"}, 1, "vigil: cannot reach http://127.0.0.1:1"},
		{"no arguments", getenv, nil, 2, "Usage: vigil ledger"},
		{"unknown command", getenv, []string{"frob"}, 2, `unknown command "frob"`},
		{"missing agent", getenv, []string{"list"}, 2, "want 1 argument(s) (AGENT), got 0"},
		{"missing seq", getenv, []string{"show", "bot"}, 2, "want 2 argument(s) (AGENT SEQ), got 1"},
		{"extra argument", getenv, []string{"latest", "bot", "extra"}, 2, "got 2"},
		{"seq not an integer", getenv, []string{"show", "bot", "two"}, 2, `SEQ must be an integer from 1, got "two"`},
		{"seq zero", getenv, []string{"trace", "bot", "0"}, 2, "SEQ must be an integer from 1"},
		{"limit not an integer", getenv, []string{"list", "bot", "--limit", "many"}, 2, "invalid value"},
		{"limit negative", getenv, []string{"list", "bot", "--limit", "-3"}, 2, "--limit: must be positive"},
		{"limit zero", getenv, []string{"list", "bot", "--limit", "0"}, 2, "--limit: must be positive"},
		{"depth zero", getenv, []string{"trace", "bot", "1", "--depth", "0"}, 2, "--depth: must be positive"},
		{"empty out", getenv, []string{"export", "bot", "--out="}, 2, "--out: must name a file"},
		{"depth negative", getenv, []string{"trace", "bot", "1", "--depth=-1"}, 2, "--depth: must be positive"},
		{"bad verdict", getenv, []string{"list", "bot", "--verdict", "maybe"}, 2, "--verdict: want one of"},
		{"unknown flag", getenv, []string{"latest", "bot", "--colour"}, 2, "flag provided but not defined"},
		{"flag of another command", getenv, []string{"show", "bot", "1", "--depth", "3"}, 2, "flag provided but not defined"},
		{"bad server", getenv, []string{"latest", "bot", "--server", "ftp://example.com"}, 2, "--server:"},
		{"bad timeout", getenv, []string{"latest", "bot", "--timeout", "0s"}, 2, "--timeout: must be positive"},
		{"verify-file takes no server", getenv, []string{"verify-file", "x.ndjson", "--server", f.url}, 2, "flag provided but not defined"},
		{"verify-file missing", getenv, []string{"verify-file", filepath.Join(f.dir, "missing.ndjson")}, 2, "no such file"},
		{"verify-file directory", getenv, []string{"verify-file", f.dir}, 2, "vigil:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tt.getenv, append([]string{"ledger"}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("exit: got %d, want %d (stderr %q)", code, tt.wantCode, errs)
			}
			if !strings.Contains(errs, tt.wantStderr) {
				t.Errorf("stderr: got %q, want it to contain %q", errs, tt.wantStderr)
			}
			if out != "" {
				t.Errorf("stdout: got %q, want nothing", out)
			}
		})
	}
}

func TestLedgerHelp(t *testing.T) {
	for _, args := range [][]string{{"ledger", "help"}, {"ledger", "--help"}} {
		code, out, _ := runCLI(t, nil, args...)
		if code != 0 || !strings.Contains(out, "verify-file FILE") || !strings.Contains(out, "SEQ  TIMESTAMP  VERDICT  UCS  TYPE  TARGET") {
			t.Errorf("%v: got exit %d and %q, want 0 and the ledger usage", args, code, out)
		}
	}
	code, _, errs := runCLI(t, nil, "ledger", "list", "-h")
	if code != 0 || !strings.Contains(errs, "Usage: vigil ledger list AGENT") {
		t.Errorf("list -h: got exit %d and %q, want 0 and the list usage", code, errs)
	}
	code, out, _ := runCLI(t, nil, "help")
	if code != 0 || !strings.Contains(out, "ledger") {
		t.Errorf("help: got exit %d and %q, want the ledger command listed", code, out)
	}
}

func TestLedgerExportFile(t *testing.T) {
	f := newCLIFixture(t)
	getenv := env(map[string]string{"VIGIL_SERVER": f.url, "VIGIL_API_KEY": cliTestKey})
	out := filepath.Join(f.dir, "bot.ndjson")
	if err := os.WriteFile(out, []byte("old content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := runCLI(t, getenv, "ledger", "export", "bot", "--out", out)
	if code != 0 || stdout != "" {
		t.Fatalf("export --out: got exit %d stdout %q stderr %q, want 0 and no stdout", code, stdout, errs)
	}
	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode: got %o, want 600", perm)
	}
	_, fromStdout, _ := runCLI(t, getenv, "ledger", "export", "bot")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != fromStdout {
		t.Errorf("file: got %d bytes, want the %d bytes of the stdout export", len(data), len(fromStdout))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(f.dir, ".bot.ndjson.tmp-*")); len(leftovers) != 0 {
		t.Errorf("temporary files: got %v, want none", leftovers)
	}

	// A failed export leaves an existing file alone.
	code, _, errs = runCLI(t, getenv, "ledger", "export", "ghost", "--out", out)
	if code != 1 || !strings.Contains(errs, "not_found") {
		t.Errorf("export of an unknown agent: got exit %d stderr %q, want 1 and not_found", code, errs)
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, data) {
		t.Errorf("file after a failed export: changed, want it untouched")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(f.dir, ".bot.ndjson.tmp-*")); len(leftovers) != 0 {
		t.Errorf("temporary files after a failure: got %v, want none", leftovers)
	}
}

func TestLedgerVerifyFile(t *testing.T) {
	f := newCLIFixture(t)
	getenv := env(map[string]string{"VIGIL_SERVER": f.url, "VIGIL_API_KEY": cliTestKey})
	_, export, _ := runCLI(t, getenv, "ledger", "export", "bot")
	lines := strings.SplitAfter(export, "\n")
	head := f.stored(t, 6)

	write := func(name, content string) string {
		p := filepath.Join(f.dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tampered := strings.Join(lines[:2], "") + strings.Replace(lines[2], "orders/42", "orders/43", 1) + strings.Join(lines[3:], "")
	reordered := lines[0] + lines[2] + lines[1] + strings.Join(lines[3:], "")
	tests := []struct {
		name       string
		content    string
		wantCode   int
		wantStdout string // prefix
	}{
		{"intact", export, 0, "intact: agent bot, 6 entries, head 6 " + head.Hash + "\n"},
		{"empty", "", 0, "intact: empty export, 0 entries\n"},
		{"tampered entry", tampered, 1, "broken: agent bot: first invalid sequence 3: "},
		{"reordered", reordered, 1, "broken: agent bot: first invalid sequence 2: "},
		{"missing first entry", strings.Join(lines[1:], ""), 1, "broken: agent bot: first invalid sequence 1: "},
		{"not JSON", export + "garbage\n", 1, "broken: agent bot: first invalid sequence 7: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(strings.ReplaceAll(tt.name, " ", "-")+".ndjson", tt.content)
			code, out, errs := runCLI(t, nil, "ledger", "verify-file", p)
			if code != tt.wantCode {
				t.Errorf("exit: got %d, want %d (stdout %q stderr %q)", code, tt.wantCode, out, errs)
			}
			if !strings.HasPrefix(out, tt.wantStdout) {
				t.Errorf("stdout: got %q, want it to start with %q", out, tt.wantStdout)
			}
		})
	}
}

// tamperStore changes what Range yields for one sequence, as a damaged log
// would.
type tamperStore struct {
	ledger.Store
	seq int64
}

func (s tamperStore) Range(ctx context.Context, agentID string, from, to int64, fn func(*ledger.Record) error) error {
	return s.Store.Range(ctx, agentID, from, to, func(r *ledger.Record) error {
		if r.Sequence == s.seq {
			c := *r
			c.Body = bytes.Replace(r.Body, []byte("orders/42"), []byte("orders/43"), 1)
			r = &c
		}
		return fn(r)
	})
}

func TestLedgerVerifyBrokenOnServer(t *testing.T) {
	f := newCLIFixture(t)
	eng, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	url := serveAdmin(t, eng, ledger.New(tamperStore{Store: f.l.Store(), seq: 3}))
	code, out, errs := runCLI(t, env(map[string]string{"VIGIL_API_KEY": cliTestKey}), "ledger", "verify", "bot", "--server", url)
	if code != 1 {
		t.Errorf("exit: got %d, want 1 (stderr %q)", code, errs)
	}
	if want := "broken: agent bot: first invalid sequence 3: "; !strings.HasPrefix(out, want) {
		t.Errorf("stdout: got %q, want it to start with %q", out, want)
	}
	if want := "verified before it: 2 entries, head 2 " + f.stored(t, 2).Hash + "\n"; !strings.HasSuffix(out, want) {
		t.Errorf("stdout: got %q, want it to end with %q", out, want)
	}
}

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPos  []string
		wantN    int
		wantFlag bool
	}{
		{"none", nil, nil, 0, false},
		{"positional only", []string{"a", "b"}, []string{"a", "b"}, 0, false},
		{"flags first", []string{"-n", "3", "-v", "a"}, []string{"a"}, 3, true},
		{"flags between and after", []string{"a", "-n=4", "b", "-v"}, []string{"a", "b"}, 4, true},
		{"double dash", []string{"-n", "1", "--", "-a", "-v"}, []string{"-a", "-v"}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newTestFlagSet()
			n := fs.Int("n", 0, "")
			v := fs.Bool("v", false, "")
			pos, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if strings.Join(pos, "|") != strings.Join(tt.wantPos, "|") || *n != tt.wantN || *v != tt.wantFlag {
				t.Errorf("got pos %q n %d v %v, want %q %d %v", pos, *n, *v, tt.wantPos, tt.wantN, tt.wantFlag)
			}
		})
	}
}

func newTestFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
