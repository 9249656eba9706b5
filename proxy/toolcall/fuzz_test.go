package toolcall

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

// FuzzParse: any request parses without panicking into a call with messages;
// every MCP action has a type; a plain HTTP call is exactly one action with
// parameters.
func FuzzParse(f *testing.F) {
	for _, tc := range append(append([]parseCase{}, mcpCases...), httpCases...) {
		r := tc.req
		f.Add(r.Method, r.Host, r.Path, r.RawQuery, r.ContentType, r.SessionID, r.Body, r.Truncated)
	}
	f.Add("POST", "h", "/", "", "", "", []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1e999}}}]`), false)
	f.Add("POST", "[::1", "//..", "a=%&b=;", "application/x-www-form-urlencoded", "", []byte("a=1&b"), true)
	rules := testRules(f)
	f.Fuzz(func(t *testing.T, method, host, path, query, contentType, session string, body []byte, truncated bool) {
		r := Request{Method: method, Scheme: "https", Host: host, Path: path, RawQuery: query, ContentType: contentType,
			SessionID: session, Body: body, Truncated: truncated}
		orig := bytes.Clone(body)
		c := Parse(r, rules)
		if !bytes.Equal(body, orig) {
			t.Fatalf("Parse changed the body")
		}
		if len(c.Messages) == 0 {
			t.Fatalf("got no messages for %+v", r)
		}
		switch c.Kind {
		case KindMCP:
			if !c.Batch && len(c.Messages) != 1 {
				t.Fatalf("got %d messages without a batch", len(c.Messages))
			}
			for _, m := range c.Messages {
				if m.Action != nil && (m.Action.Type == "" || m.Action.Parameters == nil) {
					t.Fatalf("got an MCP action %+v without type or parameters", m.Action)
				}
			}
			if upperMethod(method) == "POST" {
				checkAgainstEncodingJSON(t, body, c)
			}
		case KindHTTP, KindConnect:
			if len(c.Messages) != 1 || c.Messages[0].Action == nil || c.Messages[0].Action.Parameters == nil {
				t.Fatalf("got %+v, want one action with parameters", c.Messages)
			}
			if c.Messages[0].Action.Type == "" {
				t.Fatalf("got an action without type for %+v", r)
			}
		default:
			t.Fatalf("got kind %d", c.Kind)
		}
	})
}

// FuzzFilterToolsList: any body filters without panicking; valid JSON stays
// valid; allowing every tool changes nothing; the SSE filter reads any stream
// and passes a stream without tools/list results through unchanged.
func FuzzFilterToolsList(f *testing.F) {
	f.Add([]byte(toolsListResult), "refund")
	f.Add([]byte(`[{"result":{"tools":[{"name":"a"},1,null,{"name":7}]}},{"result":{"tools":{}}}]`), "a")
	f.Add([]byte(`{"result":{"tools":[{"name":"\u0061","name":"b"}]},"result":{"tools":[]}}`), "b")
	f.Add([]byte("data: "+listTwo+"\r\n\r\n: c\rdata: x\n\n"), "b")
	f.Add([]byte(`{"result":{"tools":[`), "")
	f.Fuzz(func(t *testing.T, body []byte, keep string) {
		allow := func(n string) bool { return n == keep }
		out, ok := FilterToolsList(body, allow)
		if !ok && !bytes.Equal(out, body) {
			t.Fatalf("not a tools/list result, yet changed: %q → %q", body, out)
		}
		if json.Valid(body) {
			if !json.Valid(out) {
				t.Fatalf("got invalid JSON %q from %q", out, body)
			}
			var a, b any
			if json.Unmarshal(body, &a) == nil && !ok {
				_ = json.Unmarshal(out, &b)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("changed %q", body)
				}
			}
		}
		if all, _ := FilterToolsList(body, allowAll); !bytes.Equal(all, body) {
			t.Fatalf("allowing all changed %q → %q", body, all)
		}
		sse, err := io.ReadAll(NewToolsListFilter(io.NopCloser(bytes.NewReader(body)), allowAll))
		if err != nil || !bytes.Equal(sse, body) {
			t.Fatalf("SSE with all allowed: got %q, %v; want %q", sse, err, body)
		}
		if _, err := io.ReadAll(NewToolsListFilter(io.NopCloser(bytes.NewReader(body)), allow)); err != nil {
			t.Fatalf("SSE: %v", err)
		}
	})
}

// checkAgainstEncodingJSON decodes an MCP body with encoding/json (exact
// member names, last one winning) and checks that Parse read the same
// methods, ids and tool names.
func checkAgainstEncodingJSON(t *testing.T, body []byte, c Call) {
	t.Helper()
	v, ok := firstValue(body)
	if !ok {
		return // the session GET or DELETE
	}
	var raws []json.RawMessage
	if c.Batch {
		if err := json.Unmarshal(v, &raws); err != nil {
			t.Fatalf("batch does not decode: %v", err)
		}
	} else {
		raws = []json.RawMessage{v}
	}
	if len(raws) != len(c.Messages) {
		t.Fatalf("got %d messages, encoding/json %d", len(c.Messages), len(raws))
	}
	for i, raw := range raws {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("message %d does not decode: %v", i, err)
		}
		var method string
		if m["method"] != nil {
			if err := json.Unmarshal(m["method"], &method); err != nil {
				t.Fatalf("message %d: method: %v", i, err)
			}
		}
		got := c.Messages[i]
		if got.RPC != method {
			t.Fatalf("message %d: got method %q, encoding/json %q", i, got.RPC, method)
		}
		if method != "" && !bytes.Equal(got.ID, m["id"]) {
			t.Fatalf("message %d: got id %s, encoding/json %s", i, got.ID, m["id"])
		}
		if method == "tools/call" {
			var p struct{ Name string }
			_ = json.Unmarshal(m["params"], &p)
			if got.Tool != p.Name {
				t.Fatalf("message %d: got tool %q, encoding/json %q", i, got.Tool, p.Name)
			}
		}
	}
}
