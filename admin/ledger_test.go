package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/ledger"
)

const (
	bodyRead   = `{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/orders/42"}}`
	bodyDelete = `{"agent_id":"support-bot","action":{"type":"delete","target":"api.example.com/orders/42"}}`
)

// quietBot is a configured agent that never acts: known, without entries.
func quietBot() governor.Contract {
	return governor.Contract{AgentID: "quiet-bot", Scope: []string{"read"}}
}

// newFileLedger returns a real ledger over a file store in a temporary
// directory, closed at the end of the test.
func newFileLedger(t *testing.T) (*ledger.Ledger, *ledger.FileStore) {
	t.Helper()
	st, err := ledger.OpenFileStore(t.TempDir(), ledger.FileOptions{})
	if err != nil {
		t.Fatalf("OpenFileStore: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return ledger.New(st), st
}

// evaluateOK posts body to /v1/evaluate and returns the verdict object.
func evaluateOK(t *testing.T, srv *httptest.Server, body string) wire.Evaluation {
	t.Helper()
	res := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator, body)
	if res.status != http.StatusOK {
		t.Fatalf("evaluate: got %d, want 200 (body %s)", res.status, res.body)
	}
	var ev wire.Evaluation
	res.decode(t, &ev)
	return ev
}

// ledgerFixture is a server over a real engine and ledger where support-bot
// has entries 1..5: ALLOW, DENY, ALLOW, DENY, ALLOW.
type ledgerFixture struct {
	srv *httptest.Server
	l   *ledger.Ledger
}

func newLedgerFixture(t *testing.T) ledgerFixture {
	t.Helper()
	l, _ := newFileLedger(t)
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot(), quietBot()), Ledger: l})
	for i, body := range []string{bodyRead, bodyDelete, bodyRead, bodyDelete, bodyRead} {
		ev := evaluateOK(t, srv, body)
		if ev.Ledger == nil || ev.Ledger.Sequence != int64(i+1) || ev.Ledger.AgentID != "support-bot" {
			t.Fatalf("evaluate %d: got ledger %+v, want support-bot sequence %d", i+1, ev.Ledger, i+1)
		}
	}
	return ledgerFixture{srv: srv, l: l}
}

// stored returns the stored JSON of entry seq of support-bot.
func (f ledgerFixture) stored(t *testing.T, seq int64) []byte {
	t.Helper()
	rec, err := f.l.Get(context.Background(), "support-bot", seq)
	if err != nil {
		t.Fatalf("Get(%d): %v", seq, err)
	}
	return rec.JSON()
}

// entryHead is what the tests read of an entry.
type entryHead struct {
	AgentID  string `json:"agent_id"`
	Sequence int64  `json:"sequence"`
	Verdict  struct {
		Decision string `json:"decision"`
	} `json:"verdict"`
	Hash string `json:"hash"`
}

func sequences(t *testing.T, raws []json.RawMessage) []int64 {
	t.Helper()
	out := make([]int64, len(raws))
	for i, r := range raws {
		var e entryHead
		if err := json.Unmarshal(r, &e); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		out[i] = e.Sequence
	}
	return out
}

func TestEvaluateRecordsInLedger(t *testing.T) {
	l, _ := newFileLedger(t)
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()), Ledger: l})
	for want := int64(1); want <= 3; want++ {
		ev := evaluateOK(t, srv, bodyRead)
		if ev.Ledger == nil {
			t.Fatalf("evaluation %d: got ledger null, want a reference", want)
		}
		if ev.Ledger.AgentID != "support-bot" || ev.Ledger.Sequence != want {
			t.Errorf("ledger: got %+v, want support-bot sequence %d", *ev.Ledger, want)
		}
		rec, err := l.Get(context.Background(), "support-bot", want)
		if err != nil {
			t.Fatalf("Get(%d): %v", want, err)
		}
		if rec.ActionID != ev.ActionID || rec.Verdict != ev.Decision {
			t.Errorf("entry %d: got action %s verdict %s, want %s %s", want, rec.ActionID, rec.Verdict, ev.ActionID, ev.Decision)
		}
	}
}

func TestEvaluateRecordsConcurrently(t *testing.T) {
	l, _ := newFileLedger(t)
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()), Ledger: l})
	const n = 16
	got := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator, bodyRead)
			var ev wire.Evaluation
			if err := json.Unmarshal(res.body, &ev); err != nil || ev.Ledger == nil {
				t.Errorf("evaluate %d: got %d %s, want a ledger reference", i, res.status, res.body)
				return
			}
			got[i] = ev.Ledger.Sequence
		})
	}
	wg.Wait()
	slices.Sort(got)
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("sequences: got %v, want 1..%d each once", got, n)
		}
	}
	report, err := l.Verify(context.Background(), "support-bot")
	if err != nil || !report.Valid || report.Entries != n {
		t.Errorf("Verify: got %+v, %v, want valid with %d entries", report, err, n)
	}
}

func TestPlaygroundDoesNotRecord(t *testing.T) {
	l, _ := newFileLedger(t)
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()), Ledger: l, Playground: true})
	res := call(t, srv, http.MethodPost, "/v1/playground/evaluate", keyOperator, bodyRead)
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
	}
	var raw map[string]any
	res.decode(t, &raw)
	if v, ok := raw["ledger"]; !ok || v != nil {
		t.Errorf("ledger: got %v (present %v), want null", v, ok)
	}
	if h, err := l.Head(context.Background(), "support-bot"); err != nil || h.Sequence != 0 {
		t.Errorf("head: got %+v, %v, want no entries", h, err)
	}
}

func TestLedgerEntry(t *testing.T) {
	f := newLedgerFixture(t)
	tests := []struct {
		name    string
		path    string
		wantSeq int64
	}{
		{"by sequence", "/v1/ledger/support-bot/2", 2},
		{"first", "/v1/ledger/support-bot/1", 1},
		{"latest", "/v1/ledger/support-bot/latest", 5},
		{"leading plus", "/v1/ledger/support-bot/+3", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, f.srv, http.MethodGet, tt.path, keyViewer, "")
			if res.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
			}
			if ct := res.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("content type: got %q, want application/json; charset=utf-8", ct)
			}
			want := append(f.stored(t, tt.wantSeq), '\n')
			if !bytes.Equal(res.body, want) {
				t.Errorf("body: got\n%s\nwant the stored entry\n%s", res.body, want)
			}
		})
	}
}

func TestLedgerList(t *testing.T) {
	f := newLedgerFixture(t)
	tests := []struct {
		name  string
		query string
		want  []int64
	}{
		{"default", "", []int64{5, 4, 3, 2, 1}},
		{"limit", "?limit=2", []int64{5, 4}},
		{"limit clamped", "?limit=5000", []int64{5, 4, 3, 2, 1}},
		{"limit beyond int64 clamped", "?limit=99999999999999999999", []int64{5, 4, 3, 2, 1}},
		{"deny", "?verdict=DENY", []int64{4, 2}},
		{"allow with limit", "?verdict=ALLOW&limit=2", []int64{5, 3}},
		{"no match", "?verdict=SUSPEND", []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, f.srv, http.MethodGet, "/v1/ledger/support-bot"+tt.query, keyViewer, "")
			if res.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
			}
			var raw map[string]json.RawMessage
			res.decode(t, &raw)
			if string(raw["entries"]) == "null" {
				t.Errorf("entries: got null, want a list")
			}
			var got wire.LedgerEntries
			res.decode(t, &got)
			if got.AgentID != "support-bot" {
				t.Errorf("agent_id: got %q, want support-bot", got.AgentID)
			}
			if seqs := sequences(t, got.Entries); !slices.Equal(seqs, tt.want) {
				t.Errorf("sequences: got %v, want %v", seqs, tt.want)
			}
			for _, e := range got.Entries {
				var h entryHead
				_ = json.Unmarshal(e, &h)
				if !bytes.Equal(e, f.stored(t, h.Sequence)) {
					t.Errorf("entry %d: got bytes that differ from the stored entry", h.Sequence)
				}
			}
		})
	}
}

func TestLedgerTrace(t *testing.T) {
	f := newLedgerFixture(t)
	tests := []struct {
		name    string
		path    string
		wantSeq int64
		wantMax int
	}{
		{"default depth", "/v1/ledger/support-bot/trace/5", 5, 10},
		{"depth 1", "/v1/ledger/support-bot/trace/5?depth=1", 5, 1},
		{"depth clamped", "/v1/ledger/support-bot/trace/3?depth=100000", 3, 1000},
		{"first entry", "/v1/ledger/support-bot/trace/1", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, f.srv, http.MethodGet, tt.path, keyViewer, "")
			if res.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
			}
			var got wire.LedgerTrace
			res.decode(t, &got)
			if got.AgentID != "support-bot" || got.Sequence != tt.wantSeq {
				t.Errorf("trace of: got %s %d, want support-bot %d", got.AgentID, got.Sequence, tt.wantSeq)
			}
			seqs := sequences(t, got.Chain)
			if len(seqs) == 0 || seqs[0] != tt.wantSeq || len(seqs) > tt.wantMax {
				t.Errorf("chain: got %v, want %d first and at most %d entries", seqs, tt.wantSeq, tt.wantMax)
			}
			for _, s := range seqs[1:] {
				if s >= tt.wantSeq {
					t.Errorf("chain: got %v, want predecessors only after the first", seqs)
				}
			}
		})
	}
}

func TestLedgerNarrative(t *testing.T) {
	f := newLedgerFixture(t)
	res := call(t, f.srv, http.MethodGet, "/v1/ledger/support-bot/narrative/2", keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("content type: got %q, want text/plain; charset=utf-8", ct)
	}
	rec, err := f.l.Get(context.Background(), "support-bot", 2)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	e, err := ledger.Decode(rec)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got, want := string(res.body), ledger.Narrative(e); got != want {
		t.Errorf("narrative: got\n%s\nwant\n%s", got, want)
	}
}

func TestLedgerVerify(t *testing.T) {
	f := newLedgerFixture(t)
	res := call(t, f.srv, http.MethodGet, "/v1/ledger/support-bot/verify", keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
	}
	var raw map[string]any
	res.decode(t, &raw)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range raw {
			if !yield(k) {
				return
			}
		}
	})
	wantKeys := []string{"agent_id", "entries", "first_invalid_sequence", "head_hash", "head_sequence", "reason", "valid"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("fields: got %v, want %v", keys, wantKeys)
	}
	var got wire.LedgerReport
	res.decode(t, &got)
	latest, err := f.l.Latest(context.Background(), "support-bot")
	if err != nil {
		t.Fatalf("Latest: %v", err)
	}
	want := wire.LedgerReport{AgentID: "support-bot", Valid: true, Entries: 5, HeadSequence: 5, HeadHash: latest.Hash}
	if got != want {
		t.Errorf("report: got %+v, want %+v", got, want)
	}
}

// tamperStore wraps a store and changes what Range yields for one sequence,
// as a damaged log would.
type tamperStore struct {
	ledger.Store
	seq int64
}

func (s tamperStore) Range(ctx context.Context, agentID string, from, to int64, fn func(*ledger.Record) error) error {
	return s.Store.Range(ctx, agentID, from, to, func(r *ledger.Record) error {
		if r.Sequence == s.seq {
			c := *r
			c.Body = bytes.Replace(r.Body, []byte(`"tier":`), []byte(`"tier" :`), 1)
			c.Body = bytes.Replace(c.Body, []byte(`"reasoning":"`), []byte(`"reasoning":"X`), 1)
			r = &c
		}
		return fn(r)
	})
}

func TestLedgerVerifyBroken(t *testing.T) {
	f := newLedgerFixture(t)
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()),
		Ledger: ledger.New(tamperStore{Store: f.l.Store(), seq: 3})})
	res := call(t, srv, http.MethodGet, "/v1/ledger/support-bot/verify", keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (a broken chain is data; body %s)", res.status, res.body)
	}
	var got wire.LedgerReport
	res.decode(t, &got)
	if got.Valid || got.FirstInvalidSequence != 3 || got.Reason == "" || got.Entries != 2 {
		t.Errorf("report: got %+v, want invalid at 3 with a reason and 2 entries verified", got)
	}
}

func TestLedgerExport(t *testing.T) {
	f := newLedgerFixture(t)
	res := call(t, f.srv, http.MethodGet, "/v1/ledger/support-bot/export", keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type: got %q, want application/x-ndjson", ct)
	}
	lines := bytes.Split(bytes.TrimSuffix(res.body, []byte("\n")), []byte("\n"))
	if len(lines) != 5 {
		t.Fatalf("lines: got %d, want 5", len(lines))
	}
	for i, line := range lines {
		if want := f.stored(t, int64(i+1)); !bytes.Equal(line, want) {
			t.Errorf("line %d: got bytes that differ from stored entry %d", i+1, i+1)
		}
	}
	report, err := ledger.VerifyStream(bytes.NewReader(res.body))
	if err != nil {
		t.Fatalf("VerifyStream: %v", err)
	}
	latest := call(t, f.srv, http.MethodGet, "/v1/ledger/support-bot/latest", keyViewer, "")
	var head entryHead
	latest.decode(t, &head)
	if !report.Valid || report.Entries != 5 || report.HeadHash != head.Hash || report.AgentID != "support-bot" {
		t.Errorf("VerifyStream: got %+v, want valid, 5 entries, head %s", report, head.Hash)
	}
}

// TestLedgerEntriesKeepStoredBytes checks that characters json.Marshal would
// escape (<, >, &, U+2028) reach the client as stored, in every route.
func TestLedgerEntriesKeepStoredBytes(t *testing.T) {
	l, _ := newFileLedger(t)
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()), Ledger: l})
	evaluateOK(t, srv, `{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/a?b<c>&d","parameters":{"note":"x\u2028y <b>&amp;</b>"}},"context":{"instruction":"look <here> & there"}}`)
	rec, err := l.Get(context.Background(), "support-bot", 1)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	stored := rec.JSON()
	if !bytes.Contains(stored, []byte("<b>")) || !bytes.Contains(stored, []byte("\u2028")) {
		t.Fatalf("stored entry: got %s, want raw <b> and U+2028 (the test relies on them)", stored)
	}
	for _, path := range []string{"/v1/ledger/support-bot/1", "/v1/ledger/support-bot/latest", "/v1/ledger/support-bot",
		"/v1/ledger/support-bot/trace/1", "/v1/ledger/support-bot/export"} {
		res := call(t, srv, http.MethodGet, path, keyViewer, "")
		if res.status != http.StatusOK || !bytes.Contains(res.body, stored) {
			t.Errorf("%s: got %d %s, want the stored bytes inside", path, res.status, res.body)
		}
	}
}

// TestLedgerEntrySchema checks that a real entry has exactly the members the
// OpenAPI LedgerEntry schema lists (required ones present, none unknown).
func TestLedgerEntrySchema(t *testing.T) {
	f := newLedgerFixture(t)
	res := call(t, f.srv, http.MethodGet, "/v1/openapi.json", keyViewer, "")
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	res.decode(t, &doc)
	schema := doc.Components.Schemas["LedgerEntry"]
	for _, seq := range []int64{1, 2} {
		var entry map[string]json.RawMessage
		if err := json.Unmarshal(f.stored(t, seq), &entry); err != nil {
			t.Fatalf("entry: %v", err)
		}
		for k := range entry {
			if _, ok := schema.Properties[k]; !ok {
				t.Errorf("entry %d member %q: not in the LedgerEntry schema, want it documented", seq, k)
			}
		}
		for _, k := range schema.Required {
			if _, ok := entry[k]; !ok {
				t.Errorf("entry %d: got no member %q, want it (required by the schema)", seq, k)
			}
		}
	}
}

func TestLedgerBadRequests(t *testing.T) {
	f := newLedgerFixture(t)
	tests := []struct {
		name       string
		path       string
		wantStatus int
		wantField  string // for 400s
	}{
		{"sequence word", "/v1/ledger/support-bot/abc", 400, "sequence"},
		{"sequence zero", "/v1/ledger/support-bot/0", 400, "sequence"},
		{"sequence negative", "/v1/ledger/support-bot/-1", 400, "sequence"},
		{"sequence fraction", "/v1/ledger/support-bot/1.5", 400, "sequence"},
		{"sequence hex", "/v1/ledger/support-bot/0x1", 400, "sequence"},
		{"trace without sequence", "/v1/ledger/support-bot/trace", 400, "sequence"},
		{"trace sequence word", "/v1/ledger/support-bot/trace/first", 400, "sequence"},
		{"trace sequence zero", "/v1/ledger/support-bot/trace/0", 400, "sequence"},
		{"narrative sequence word", "/v1/ledger/support-bot/narrative/x", 400, "sequence"},
		{"depth zero", "/v1/ledger/support-bot/trace/1?depth=0", 400, "depth"},
		{"depth negative", "/v1/ledger/support-bot/trace/1?depth=-4", 400, "depth"},
		{"depth word", "/v1/ledger/support-bot/trace/1?depth=deep", 400, "depth"},
		{"depth empty", "/v1/ledger/support-bot/trace/1?depth=", 400, "depth"},
		{"depth fraction", "/v1/ledger/support-bot/trace/1?depth=2.5", 400, "depth"},
		{"limit zero", "/v1/ledger/support-bot?limit=0", 400, "limit"},
		{"limit negative", "/v1/ledger/support-bot?limit=-1", 400, "limit"},
		{"limit word", "/v1/ledger/support-bot?limit=all", 400, "limit"},
		{"limit empty", "/v1/ledger/support-bot?limit=", 400, "limit"},
		{"verdict lower case", "/v1/ledger/support-bot?verdict=deny", 400, "verdict"},
		{"verdict unknown", "/v1/ledger/support-bot?verdict=BLOCK", 400, "verdict"},
		{"verdict empty", "/v1/ledger/support-bot?verdict=", 400, "verdict"},
		{"unknown agent entry", "/v1/ledger/ghost/1", 404, ""},
		{"unknown agent latest", "/v1/ledger/ghost/latest", 404, ""},
		{"unknown agent list", "/v1/ledger/ghost", 404, ""},
		{"unknown agent verify", "/v1/ledger/ghost/verify", 404, ""},
		{"unknown agent export", "/v1/ledger/ghost/export", 404, ""},
		{"unknown agent trace", "/v1/ledger/ghost/trace/1", 404, ""},
		{"unknown agent narrative", "/v1/ledger/ghost/narrative/1", 404, ""},
		{"missing sequence", "/v1/ledger/support-bot/6", 404, ""},
		{"huge sequence", "/v1/ledger/support-bot/99999999999999999999", 404, ""},
		{"missing trace sequence", "/v1/ledger/support-bot/trace/600", 404, ""},
		{"missing narrative sequence", "/v1/ledger/support-bot/narrative/7", 404, ""},
		{"known agent without entries: latest", "/v1/ledger/quiet-bot/latest", 404, ""},
		{"known agent without entries: entry", "/v1/ledger/quiet-bot/1", 404, ""},
		{"too deep", "/v1/ledger/support-bot/trace/1/more", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, f.srv, http.MethodGet, tt.path, keyViewer, "")
			code := wire.CodeNotFound
			if tt.wantStatus == 400 {
				code = wire.CodeInvalidRequest
			}
			body := res.wantError(t, tt.wantStatus, code)
			got, _ := body.Details["field"].(string)
			if got != tt.wantField {
				t.Errorf("details.field: got %q, want %q (message %q)", got, tt.wantField, body.Message)
			}
		})
	}
}

func TestLedgerKnownAgentWithoutEntries(t *testing.T) {
	f := newLedgerFixture(t)
	tests := []struct {
		path  string
		check func(t *testing.T, res response)
	}{
		{"/v1/ledger/quiet-bot", func(t *testing.T, res response) {
			if got := strings.TrimSpace(string(res.body)); got != `{"agent_id":"quiet-bot","entries":[]}` {
				t.Errorf("body: got %s, want an empty list", got)
			}
		}},
		{"/v1/ledger/quiet-bot/verify", func(t *testing.T, res response) {
			var got wire.LedgerReport
			res.decode(t, &got)
			want := wire.LedgerReport{AgentID: "quiet-bot", Valid: true, HeadHash: ledger.ZeroHash}
			if got != want {
				t.Errorf("report: got %+v, want %+v", got, want)
			}
		}},
		{"/v1/ledger/quiet-bot/export", func(t *testing.T, res response) {
			if len(res.body) != 0 {
				t.Errorf("body: got %q, want empty", res.body)
			}
			if ct := res.header.Get("Content-Type"); ct != "application/x-ndjson" {
				t.Errorf("content type: got %q, want application/x-ndjson", ct)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res := call(t, f.srv, http.MethodGet, tt.path, keyViewer, "")
			if res.status != http.StatusOK {
				t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
			}
			tt.check(t, res)
		})
	}
}

// TestLedgerAgentKnownByEntries: an agent that is no longer configured but
// has entries is still readable.
func TestLedgerAgentKnownByEntries(t *testing.T) {
	l, _ := newFileLedger(t)
	old := newEngine(t, supportBot())
	d, err := old.Evaluate(governor.Request{AgentID: "support-bot", Action: governor.Action{Type: "read", Target: "api.example.com/x"}})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if _, err := l.Append(context.Background(), d); err != nil {
		t.Fatalf("Append: %v", err)
	}
	srv := newServer(t, admin.Options{Governor: newEngine(t), Ledger: l})
	for _, path := range []string{"/v1/ledger/support-bot", "/v1/ledger/support-bot/1", "/v1/ledger/support-bot/latest",
		"/v1/ledger/support-bot/verify", "/v1/ledger/support-bot/export", "/v1/ledger/support-bot/trace/1", "/v1/ledger/support-bot/narrative/1"} {
		if res := call(t, srv, http.MethodGet, path, keyViewer, ""); res.status != http.StatusOK {
			t.Errorf("%s: got %d, want 200 (body %s)", path, res.status, res.body)
		}
	}
	res := call(t, srv, http.MethodGet, "/v1/ledger/support-bot/2", keyViewer, "")
	res.wantError(t, http.StatusNotFound, wire.CodeNotFound)
}

func TestLedgerAuth(t *testing.T) {
	f := newLedgerFixture(t)
	call(t, f.srv, http.MethodGet, "/v1/ledger/support-bot/latest", "", "").wantError(t, http.StatusUnauthorized, wire.CodeUnauthenticated)
	call(t, f.srv, http.MethodGet, "/v1/ledger/support-bot/latest", "nope", "").wantError(t, http.StatusUnauthorized, wire.CodeUnauthenticated)
	res := call(t, f.srv, http.MethodDelete, "/v1/ledger/support-bot/1", keyAdmin, "")
	res.wantError(t, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed)
	if allow := res.header.Get("Allow"); allow != "GET" {
		t.Errorf("Allow: got %q, want GET", allow)
	}
}

func TestLedgerDisabled(t *testing.T) {
	srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot())})
	ev := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator, bodyRead)
	var raw map[string]any
	ev.decode(t, &raw)
	if v, ok := raw["ledger"]; ev.status != http.StatusOK || !ok || v != nil {
		t.Errorf("evaluate: got %d ledger %v (present %v), want 200 with ledger null", ev.status, v, ok)
	}
	for _, path := range []string{"/v1/ledger/support-bot", "/v1/ledger/support-bot/1", "/v1/ledger/support-bot/latest",
		"/v1/ledger/support-bot/verify", "/v1/ledger/support-bot/export", "/v1/ledger/support-bot/trace/1",
		"/v1/ledger/support-bot/narrative/1", "/v1/ledger/ghost/abc"} {
		body := call(t, srv, http.MethodGet, path, keyViewer, "").wantError(t, http.StatusNotFound, wire.CodeNotFound)
		if want := "the ledger is disabled (runtime.enable_ledger: false)"; body.Message != want {
			t.Errorf("%s: message: got %q, want %q", path, body.Message, want)
		}
	}
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLedgerStoreFailure(t *testing.T) {
	l, st := newFileLedger(t)
	var logs syncBuffer
	eng := newEngine(t, supportBot())
	srv := newServer(t, admin.Options{Governor: eng, Ledger: l, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	evaluateOK(t, srv, bodyRead)
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	res := call(t, srv, http.MethodPost, "/v1/evaluate", keyOperator, bodyRead)
	body := res.wantError(t, http.StatusServiceUnavailable, wire.CodeUnavailable)
	if want := "the decision could not be recorded; nothing was done"; body.Message != want {
		t.Errorf("message: got %q, want %q", body.Message, want)
	}
	if bytes.Contains(res.body, []byte("decision\":")) || bytes.Contains(res.body, []byte("closed")) {
		t.Errorf("body: got %s, want no verdict and no internal cause", res.body)
	}
	for _, path := range []string{"/v1/ledger/support-bot", "/v1/ledger/support-bot/1", "/v1/ledger/support-bot/latest",
		"/v1/ledger/support-bot/verify", "/v1/ledger/support-bot/export", "/v1/ledger/support-bot/trace/1",
		"/v1/ledger/support-bot/narrative/1", "/v1/ledger/ghost"} {
		res := call(t, srv, http.MethodGet, path, keyViewer, "")
		res.wantError(t, http.StatusServiceUnavailable, wire.CodeUnavailable)
	}
	if !strings.Contains(logs.String(), ledger.ErrClosed.Error()) {
		t.Errorf("log: got %q, want the cause (%v) logged", logs.String(), ledger.ErrClosed)
	}
}

// failingStore fails Range after yielding `after` records.
type failingStore struct {
	ledger.Store
	after int
}

var errDiskGone = errors.New("disk gone")

func (s failingStore) Range(ctx context.Context, agentID string, from, to int64, fn func(*ledger.Record) error) error {
	n := 0
	return s.Store.Range(ctx, agentID, from, to, func(r *ledger.Record) error {
		if n == s.after {
			return errDiskGone
		}
		n++
		return fn(r)
	})
}

func TestLedgerExportFailure(t *testing.T) {
	f := newLedgerFixture(t)
	for range 40 { // enough entries to pass the export's 64 KiB buffer
		evaluateOK(t, f.srv, bodyRead)
	}
	t.Run("before the first byte", func(t *testing.T) {
		srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()), Ledger: ledger.New(failingStore{Store: f.l.Store(), after: 1})})
		res := call(t, srv, http.MethodGet, "/v1/ledger/support-bot/export", keyViewer, "")
		res.wantError(t, http.StatusServiceUnavailable, wire.CodeUnavailable)
	})
	t.Run("midway", func(t *testing.T) {
		srv := newServer(t, admin.Options{Governor: newEngine(t, supportBot()), Ledger: ledger.New(failingStore{Store: f.l.Store(), after: 44})})
		res, err := srv.Client().Do(mustRequest(t, srv.URL+"/v1/ledger/support-bot/export", keyViewer))
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status: got %d, want 200 (the failure comes after the headers)", res.StatusCode)
		}
		n, err := io.Copy(io.Discard, bufio.NewReader(res.Body))
		if err == nil {
			t.Errorf("body: read %d bytes without error, want the connection cut", n)
		}
		if n < 64<<10 {
			t.Errorf("body: got %d bytes before the cut, want at least the first 64 KiB (the test needs more entries)", n)
		}
	})
}

func mustRequest(t *testing.T, url, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("X-Api-Key", key)
	return req
}
