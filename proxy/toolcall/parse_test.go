package toolcall

import (
	"reflect"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/governor"
)

type parseCase struct {
	name string
	req  Request
	want callView
}

// mcpCases are JSON-RPC bodies: actions, protocol traffic, and what is not
// JSON-RPC 2.0 and so is governed as a plain POST.
var mcpCases = []parseCase{
	{"tools/call without route",
		post("127.0.0.1:8080", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"refund","arguments":{"order":"A-7","amount":80}}}`),
		mcpCall("", false, messageView{ID: "1", RPC: "tools/call", Tool: "refund",
			Action: act("POST", "refund", "127.0.0.1:8080/mcp", map[string]any{"order": "A-7", "amount": 80.0})})},
	{"tools/call with route: target and reversibility from the route",
		post("MCP.example.com", "/mcp", `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"create_ticket","arguments":{"title":"x"}}}`),
		mcpCall("mcp", false, messageView{ID: `"a-1"`, RPC: "tools/call", Tool: "create_ticket",
			Action: act("POST", "create_ticket", "crm", map[string]any{"title": "x"}).rev(governor.Compensable)})},
	{"tools/call without arguments",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ping_all"}}`),
		mcpCall("", false, messageView{ID: "2", RPC: "tools/call", Tool: "ping_all", Action: act("POST", "ping_all", "mcp.local/mcp", nil)})},
	{"tools/call with null arguments",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ping_all","arguments":null}}`),
		mcpCall("", false, messageView{ID: "2", RPC: "tools/call", Tool: "ping_all", Action: act("POST", "ping_all", "mcp.local/mcp", nil)})},
	{"tools/call with nested arguments",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"q","arguments":{"f":{"a":[1,"b",null,true]},"n":-2.5e3}}}`),
		mcpCall("", false, messageView{ID: "3", RPC: "tools/call", Tool: "q", Action: act("POST", "q", "mcp.local/mcp",
			map[string]any{"f": map[string]any{"a": []any{1.0, "b", nil, true}}, "n": -2500.0})})},
	{"tools/call as a notification",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"fire"}}`),
		mcpCall("", false, messageView{RPC: "tools/call", Tool: "fire", Action: act("POST", "fire", "mcp.local/mcp", nil)})},
	{"tools/call with escaped keys and values",
		post("mcp.local", "/mcp", `{"jsonrp\u0063":"2.0","id":4,"method":"tools\/call","params":{"n\u0061me":"re\u0066und"}}`),
		mcpCall("", false, messageView{ID: "4", RPC: "tools/call", Tool: "refund", Action: act("POST", "refund", "mcp.local/mcp", nil)})},
	{"tools/call followed by other data: the first value counts",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a"}} {"jsonrpc":"2.0","method":"ping"}`),
		mcpCall("", false, messageView{ID: "5", RPC: "tools/call", Tool: "a", Action: act("POST", "a", "mcp.local/mcp", nil)})},
	{"tools/call with leading whitespace and any content type",
		Request{Method: "POST", Host: "mcp.local", Path: "/mcp", ContentType: "text/plain", Body: []byte("\r\n\t {\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}")},
		mcpCall("", false, messageView{ID: "6", RPC: "tools/call", Tool: "a", Action: act("POST", "a", "mcp.local/mcp", nil)})},
	{"resources/read",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///etc/hosts"}}`),
		mcpCall("", false, messageView{ID: "7", RPC: "resources/read", Action: act("POST", "read", "file:///etc/hosts", map[string]any{"uri": "file:///etc/hosts"})})},
	{"resources/read through a route takes its reversibility, not its target",
		post("mcp.example.com", "/mcp", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"crm://customers/42"}}`),
		mcpCall("mcp", false, messageView{ID: "7", RPC: "resources/read",
			Action: act("POST", "read", "crm://customers/42", map[string]any{"uri": "crm://customers/42"}).rev(governor.Compensable)})},
	{"prompts/get",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"summarize","arguments":{"style":"short"}}}`),
		mcpCall("", false, messageView{ID: "8", RPC: "prompts/get", Action: act("POST", "read", "prompt:summarize", map[string]any{"style": "short", "name": "summarize"})})},
	{"prompts/get: the prompt name wins over an argument called name",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"greet","arguments":{"name":"Ada"}}}`),
		mcpCall("", false, messageView{ID: "9", RPC: "prompts/get", Action: act("POST", "read", "prompt:greet", map[string]any{"name": "greet"})})},
	{"client response with result",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":"s-1","result":{"roots":[]}}`),
		mcpCall("", false, messageView{})},
	{"client response with error",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no"}}`),
		mcpCall("", false, messageView{})},
	{"batch mixing actions and protocol traffic",
		post("mcp.example.com", "/mcp", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1}}},
			{"jsonrpc":"2.0","method":"notifications/progress","params":{}},
			{"jsonrpc":"2.0","id":2,"method":"ping"},
			{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"crm://x"}},
			{"jsonrpc":"2.0","id":9,"result":{}}]`),
		mcpCall("mcp", true,
			messageView{ID: "1", RPC: "tools/call", Tool: "a", Action: act("POST", "a", "crm", map[string]any{"x": 1.0}).rev(governor.Compensable)},
			messageView{RPC: "notifications/progress"},
			messageView{ID: "2", RPC: "ping"},
			messageView{ID: "3", RPC: "resources/read", Action: act("POST", "read", "crm://x", map[string]any{"uri": "crm://x"}).rev(governor.Compensable)},
			messageView{})},
	{"batch of protocol traffic only",
		post("mcp.local", "/mcp", `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`),
		mcpCall("", true, messageView{RPC: "notifications/initialized"})},

	// Not JSON-RPC 2.0: a plain POST.
	{"tools/call without params.name",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "tools/call", "params": map[string]any{"arguments": map[string]any{}}}))},
	{"tools/call with a non-string name",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "tools/call", "params": map[string]any{"name": 7.0}}))},
	{"tools/call with an empty name",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":""}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "method": "tools/call", "params": map[string]any{"name": ""}}))},
	{"tools/call with array arguments",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","arguments":[1]}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "method": "tools/call", "params": map[string]any{"name": "a", "arguments": []any{1.0}}}))},
	{"tools/call with positional params",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","method":"tools/call","params":["a"]}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "method": "tools/call", "params": []any{"a"}}))},
	{"resources/read without uri",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "id": 1.0, "method": "resources/read", "params": map[string]any{}}))},
	{"a method key in another case beside method",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","method":"ping","METHOD":"tools/call","params":{"name":"x"}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "method": "ping", "METHOD": "tools/call", "params": map[string]any{"name": "x"}}))},
	{"a name key in another case beside name",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","Name":"b"}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "method": "tools/call", "params": map[string]any{"name": "a", "Name": "b"}}))},
	{"jsonrpc version 1.0",
		post("mcp.local", "/mcp", `{"jsonrpc":"1.0","method":"tools/call","params":{"name":"a"}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "1.0", "method": "tools/call", "params": map[string]any{"name": "a"}}))},
	{"no jsonrpc member",
		post("mcp.local", "/mcp", `{"method":"tools/call","params":{"name":"a"}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"method": "tools/call", "params": map[string]any{"name": "a"}}))},
	{"response without id",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","result":{}}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "result": map[string]any{}}))},
	{"non-string method",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","method":1}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "method": 1.0}))},
	{"empty batch",
		post("mcp.local", "/mcp", `[]`),
		httpCall("", act("POST", "create", "mcp.local/mcp", nil))},
	{"batch with a bad message",
		post("mcp.local", "/mcp", `[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"tools/call","params":{}}]`),
		httpCall("", act("POST", "create", "mcp.local/mcp", nil))},
	{"batch with a non-object",
		post("mcp.local", "/mcp", `[{"jsonrpc":"2.0","method":"ping"},1]`),
		httpCall("", act("POST", "create", "mcp.local/mcp", nil))},
	{"invalid JSON",
		post("mcp.local", "/mcp", `{"jsonrpc":"2.0","method":"tools/call",}`),
		httpCall("", act("POST", "create", "mcp.local/mcp", nil))},
	{"truncated body",
		Request{Method: "POST", Host: "mcp.local", Path: "/mcp", Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upload","arguments":{"data":"AAAA`), Truncated: true},
		httpCall("", act("POST", "create", "mcp.local/mcp", nil))},
	{"JSON-RPC in a PUT is plain HTTP",
		Request{Method: "PUT", Host: "mcp.local", Path: "/mcp", Body: []byte(`{"jsonrpc":"2.0","method":"ping"}`)},
		httpCall("", act("PUT", "update", "mcp.local/mcp", map[string]any{"jsonrpc": "2.0", "method": "ping"}))},
}

// passthroughMethods are the protocol's own requests and notifications.
var passthroughMethods = []string{
	"initialize", "ping", "notifications/initialized", "notifications/cancelled", "notifications/progress",
	"notifications/roots/list_changed", "tools/list", "resources/list", "resources/templates/list", "prompts/list",
	"completion/complete", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "sampling/createMessage", "x/unknown",
}

// httpCases are plain HTTP requests and the MCP session's GET and DELETE.
var httpCases = []parseCase{
	{"GET with query",
		Request{Method: "GET", Scheme: "https", Host: "api.example.com", Path: "/customers/42", RawQuery: "fields=name&limit=10"},
		httpCall("", act("GET", "read", "api.example.com/customers/42", map[string]any{"fields": "name", "limit": "10"}))},
	{"repeated query parameters",
		Request{Method: "GET", Host: "api.example.com", Path: "/search", RawQuery: "tag=a&tag=b&tag=c&q=x+y%21"},
		httpCall("", act("GET", "read", "api.example.com/search", map[string]any{"tag": []any{"a", "b", "c"}, "q": "x y!"}))},
	{"semicolons separate query parameters too",
		Request{Method: "GET", Host: "api.example.com", Path: "/s", RawQuery: "a=1;amount=900&&b"},
		httpCall("", act("GET", "read", "api.example.com/s", map[string]any{"a": "1", "amount": "900", "b": ""}))},
	{"a query escape that does not decode is kept",
		Request{Method: "GET", Host: "api.example.com", Path: "/s", RawQuery: "a=%zz"},
		httpCall("", act("GET", "read", "api.example.com/s", map[string]any{"a": "%zz"}))},
	{"query and JSON body: the body wins a clash",
		Request{Method: "POST", Host: "api.example.com", Path: "/orders", RawQuery: "amount=1&source=q", Body: []byte(`{"amount":900,"items":[{"sku":"x"}]}`)},
		httpCall("", act("POST", "create", "api.example.com/orders", map[string]any{"amount": 900.0, "source": "q", "items": []any{map[string]any{"sku": "x"}}}))},
	{"JSON body with any content type",
		Request{Method: "PATCH", Host: "api.example.com", Path: "/orders/7", ContentType: "text/plain", Body: []byte(` {"status":"paid"}`)},
		httpCall("", act("PATCH", "update", "api.example.com/orders/7", map[string]any{"status": "paid"}))},
	{"JSON array body gives no parameters",
		Request{Method: "PUT", Host: "api.example.com", Path: "/list", Body: []byte(`[1,2]`)},
		httpCall("", act("PUT", "update", "api.example.com/list", nil))},
	{"number beyond float64 stays text, the rest decodes",
		Request{Method: "POST", Host: "api.example.com", Path: "/pay", Body: []byte(`{"amount":1e400,"n":{"m":[-1e999]},"k":1}`)},
		httpCall("", act("POST", "create", "api.example.com/pay", map[string]any{"amount": "1e400", "n": map[string]any{"m": []any{"-1e999"}}, "k": 1.0}))},
	{"form body",
		Request{Method: "POST", Host: "api.stripe.com", Path: "/v1/refunds", ContentType: "application/x-www-form-urlencoded; charset=utf-8", Body: []byte("charge=ch_1&amount=50000")},
		httpCall("", act("POST", "create", "api.stripe.com/v1/refunds", map[string]any{"charge": "ch_1", "amount": "50000"}))},
	{"truncated form body loses its last pair",
		Request{Method: "POST", Host: "api.stripe.com", Path: "/v1/refunds", ContentType: "application/x-www-form-urlencoded", Body: []byte("charge=ch_1&amount=50"), Truncated: true},
		httpCall("", act("POST", "create", "api.stripe.com/v1/refunds", map[string]any{"charge": "ch_1"}))},
	{"HEAD is read",
		Request{Method: "HEAD", Host: "api.example.com", Path: "/x"},
		httpCall("", act("HEAD", "read", "api.example.com/x", nil))},
	{"PUT is update",
		Request{Method: "PUT", Host: "api.example.com", Path: "/x"},
		httpCall("", act("PUT", "update", "api.example.com/x", nil))},
	{"DELETE is delete",
		Request{Method: "DELETE", Host: "api.example.com", Path: "/x"},
		httpCall("", act("DELETE", "delete", "api.example.com/x", nil))},
	{"OPTIONS is options",
		Request{Method: "OPTIONS", Host: "api.example.com", Path: "/x"},
		httpCall("", act("OPTIONS", "options", "api.example.com/x", nil))},
	{"custom method is its lower-case name",
		Request{Method: "PURGE", Host: "cdn.example.com", Path: "/x"},
		httpCall("", act("PURGE", "purge", "cdn.example.com/x", nil))},
	{"lower-case method is read as upper case",
		Request{Method: "delete", Host: "api.example.com", Path: "/repos/7"},
		httpCall("delete_repo", act("delete", "delete_repo", "github/repos", nil).rev(governor.Irreversible))},
	{"empty method is GET",
		Request{Host: "api.example.com"},
		httpCall("", act("", "read", "api.example.com/", nil))},
	{"route: type, target and reversibility",
		Request{Method: "DELETE", Scheme: "https", Host: "api.example.com", Path: "/repos/vigil", RawQuery: "force=1"},
		httpCall("delete_repo", act("DELETE", "delete_repo", "github/repos", map[string]any{"force": "1"}).rev(governor.Irreversible))},
	{"route precedence: the first matching route wins",
		Request{Method: "GET", Host: "api.example.com", Path: "/repos/vigil"},
		httpCall("repo_access", act("GET", "repo_access", "api.example.com/repos/vigil", nil))},
	{"route host with port",
		Request{Method: "POST", Scheme: "https", Host: "pay.example.com:8443", Path: "/v1/charges", Body: []byte(`{"amount":5}`)},
		httpCall("charge", act("POST", "charge", "payments/charges", map[string]any{"amount": 5.0}))},
	{"route host with port does not match another port",
		Request{Method: "POST", Scheme: "https", Host: "pay.example.com:9443", Path: "/v1/charges"},
		httpCall("", act("POST", "create", "pay.example.com:9443/v1/charges", nil))},
	{"route host glob and method",
		Request{Method: "POST", Host: "db.internal:5000", Path: "/rows"},
		httpCall("internal_write", act("POST", "internal_write", "db.internal:5000/rows", nil))},
	{"route method does not match",
		Request{Method: "GET", Host: "db.internal", Path: "/rows"},
		httpCall("", act("GET", "read", "db.internal/rows", nil))},
	{"target host: lower case, no trailing dot, no default port",
		Request{Method: "GET", Scheme: "https", Host: "API.Example.COM.:443", Path: "/a"},
		httpCall("", act("GET", "read", "api.example.com/a", nil))},
	{"target host: another port is kept",
		Request{Method: "GET", Scheme: "http", Host: "127.0.0.1:443", Path: "/a"},
		httpCall("", act("GET", "read", "127.0.0.1:443/a", nil))},
	{"target host: IPv6 literal",
		Request{Method: "GET", Scheme: "http", Host: "[::1]:80", Path: "/a"},
		httpCall("", act("GET", "read", "[::1]/a", nil))},
	{"target path: dot segments removed",
		Request{Method: "GET", Host: "api.example.com", Path: "/public/../admin//users/./"},
		httpCall("", act("GET", "read", "api.example.com/admin/users/", nil))},
	{"target path: dot segments cannot leave a route",
		Request{Method: "DELETE", Host: "api.example.com", Path: "/repos/../users/1"},
		httpCall("", act("DELETE", "delete", "api.example.com/users/1", nil))},
	{"GET with Mcp-Session-Id is the MCP event stream",
		Request{Method: "GET", Host: "mcp.example.com", Path: "/mcp", SessionID: "s-1"},
		mcpCall("mcp", false, messageView{})},
	{"DELETE with Mcp-Session-Id ends the MCP session",
		Request{Method: "DELETE", Host: "mcp.local", Path: "/mcp", SessionID: "s-1"},
		mcpCall("", false, messageView{})},
	{"GET without Mcp-Session-Id is a plain read",
		Request{Method: "GET", Host: "mcp.local", Path: "/mcp"},
		httpCall("", act("GET", "read", "mcp.local/mcp", nil))},
	{"POST with Mcp-Session-Id and no JSON-RPC is a plain POST",
		Request{Method: "POST", Host: "mcp.local", Path: "/mcp", SessionID: "s-1", Body: []byte("hello")},
		httpCall("", act("POST", "create", "mcp.local/mcp", nil))},
	{"CONNECT through Parse",
		Request{Method: "CONNECT", Host: "Api.Example.com:443"},
		callView{Kind: "connect", Messages: []messageView{{Action: act("CONNECT", "connect", "api.example.com:443", nil)}}}},
}

func TestParse(t *testing.T) {
	rules := testRules(t)
	cases := append(append([]parseCase{}, mcpCases...), httpCases...)
	for _, m := range passthroughMethods {
		cases = append(cases, parseCase{"passthrough " + m,
			post("mcp.local", "/mcp", `{"jsonrpc":"2.0","id":11,"method":"`+m+`","params":{"name":"x"}}`),
			mcpCall("", false, messageView{ID: "11", RPC: m})})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := viewOf(Parse(tc.req, rules))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestParseConnect(t *testing.T) {
	cases := []struct{ name, hostport, want string }{
		{"host and port", "api.example.com:443", "api.example.com:443"},
		{"upper case and trailing dot", "API.example.com.:8443", "api.example.com:8443"},
		{"IPv6", "[::1]:443", "[::1]:443"},
		{"no port", "example.com", "example.com"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := viewOf(ParseConnect(tc.hostport))
			want := callView{Kind: "connect", Messages: []messageView{{Action: act("CONNECT", "connect", tc.want, nil)}}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestCallActions(t *testing.T) {
	cases := []struct {
		name string
		body string
		want bool
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`, true},
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, false},
		{"batch with one action", `[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"prompts/get","params":{"name":"p"}}]`, true},
		{"plain POST", `not json`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Parse(post("mcp.local", "/mcp", tc.body), nil)
			if got := c.Actions(); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestParseDoesNotAlias checks that nothing returned shares memory with the
// body, which the proxy may reuse.
func TestParseDoesNotAlias(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"tool","arguments":{"k":"v"}}}`)
	r := post("mcp.local", "/mcp", "")
	r.Body = body
	c := Parse(r, nil)
	for i := range body {
		body[i] = 'x'
	}
	m := c.Messages[0]
	if string(m.ID) != `"abc"` || m.Tool != "tool" || m.Action.Parameters["k"] != "v" {
		t.Errorf("got id %s, tool %q, parameters %v after overwriting the body; want \"abc\", tool, k=v", m.ID, m.Tool, m.Action.Parameters)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{0: "", KindHTTP: "http", KindMCP: "mcp", KindConnect: "connect", 9: ""} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d): got %q, want %q", k, got, want)
		}
	}
}

func TestCleanPath(t *testing.T) {
	cases := map[string]string{"": "/", "/": "/", "a": "/a", "/a/": "/a/", "/a//b/": "/a/b/", "/a/./b/../c": "/a/c", "/..": "/", "//": "/", "/a/..": "/"}
	for in, want := range cases {
		if got := cleanPath(in); got != want {
			t.Errorf("cleanPath(%q): got %q, want %q", in, got, want)
		}
	}
}

func TestParseLargeMCPMessageIsPlainPOST(t *testing.T) {
	args := strings.Repeat("a", InspectLimit)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upload","arguments":{"data":"` + args + `"}}}`)
	r := post("mcp.local", "/mcp", "")
	r.Body, r.Truncated = body[:InspectLimit], true
	got := viewOf(Parse(r, nil))
	want := httpCall("", act("POST", "create", "mcp.local/mcp", nil))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
