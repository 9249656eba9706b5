package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy"
)

type searchArgs struct {
	Query string `json:"query"`
}

// mcpServer is a real MCP server (the go-sdk's streamable HTTP handler)
// with three tools; it counts the tool calls it runs.
func mcpServer(t *testing.T, jsonResponses bool) (*httptest.Server, *upstream) {
	t.Helper()
	var u upstream
	s := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "v1"}, nil)
	for _, name := range []string{"search_docs", "delete_repo", "secret_tool"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: name}, func(ctx context.Context, req *mcp.CallToolRequest, in searchArgs) (*mcp.CallToolResult, any, error) {
			u.calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran: " + in.Query}}}, nil, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponses})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, &u
}

func mcpSetup() setup {
	return setup{contracts: []governor.Contract{{AgentID: "bot", Scope: []string{"search_docs", "delete_repo"}}},
		tokens: map[string]string{"bot": "s3cret"}}
}

func TestMCPSessionThroughProxy(t *testing.T) {
	for _, jsonResponses := range []bool{false, true} {
		name := "event-stream answers"
		if jsonResponses {
			name = "JSON answers"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, mcpSetup())
			srv, u := mcpServer(t, jsonResponses)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: h.client("bot", "s3cret"), MaxRetries: -1}, nil)
			if err != nil {
				t.Fatalf("initialize through the proxy: %v", err)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if want := []string{"delete_repo", "search_docs"}; !slices.Equal(names, want) {
				t.Errorf("tools/list: got %v, want %v (filtered to the scope)", names, want)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_docs", Arguments: map[string]any{"query": "go"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "search_docs ran: go" {
				t.Errorf("allowed call: got %+v", res)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "secret_tool", Arguments: map[string]any{"query": "x"}})
			if err != nil {
				t.Fatalf("refused call: got a protocol error %v, want a tool error", err)
			}
			if !res.IsError || len(res.Content) != 1 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "Denied by governance: ") {
				t.Errorf("refused call: got %+v, want an isError result the model can read", res)
			}
			if v, ok := res.Meta["vigil/verdict"].(map[string]any); !ok || v["decision"] != "DENY" {
				t.Errorf("refused call _meta: got %v, want vigil/verdict with decision DENY", res.Meta)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if got := u.calls.Load(); got != 1 {
				t.Errorf("tool calls run by the server: got %d, want 1", got)
			}
			if got := h.ledgerVerdicts("bot"); !slices.Equal(got, []string{"ALLOW", "DENY"}) {
				t.Errorf("ledger: got %v, want [ALLOW DENY] (only the two calls)", got)
			}
		})
	}
}

func TestMCPRefusalsRaw(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantBody []string // substrings of the answer
		wantVerd string
	}{
		{"single call denied: a JSON-RPC result with the request's id",
			`{"jsonrpc":"2.0","id":"req-7","method":"tools/call","params":{"name":"secret_tool","arguments":{}}}`,
			[]string{`"id":"req-7"`, `"isError":true`, `"vigil/verdict"`, `"decision":"DENY"`, `"sequence":1`}, "DENY"},
		{"batch with one refused call: refused as a whole, one result per request",
			`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_docs","arguments":{}}},` +
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret_tool","arguments":{}}},` +
				`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}]`,
			[]string{`[{"jsonrpc":"2.0","id":1,`, `{"jsonrpc":"2.0","id":2,`, `"isError":true`}, "DENY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mcpSetup())
			srv, u := mcpServer(t, true)
			resp, body := do(t, h.client("bot", "s3cret"), http.MethodPost, srv.URL+"/mcp", "application/json", tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("got %d, want 200: %s", resp.StatusCode, body)
			}
			wantHeader(t, resp, proxy.HeaderVerdict, tc.wantVerd)
			for _, s := range tc.wantBody {
				if !strings.Contains(string(body), s) {
					t.Errorf("answer lacks %s: %s", s, body)
				}
			}
			if got := u.calls.Load(); got != 0 {
				t.Errorf("the MCP server ran %d tools", got)
			}
		})
	}
}

func TestForgedSessionHeaderIsGoverned(t *testing.T) {
	h := newHarness(t, setup{contracts: []governor.Contract{{AgentID: "bot", Scope: []string{"read"}}},
		tokens: map[string]string{"bot": "s3cret"}})
	var u upstream
	srv := okUpstream(t, &u)
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/repos/x", nil)
	req.Header.Set("Mcp-Session-Id", "made-up")
	resp, err := h.client("bot", "s3cret").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || u.calls.Load() != 0 {
		t.Errorf("DELETE with a session id no upstream issued: got %d with %d tool calls, want 403 (a governed delete) and none",
			resp.StatusCode, u.calls.Load())
	}
	wantHeader(t, resp, proxy.HeaderVerdict, "DENY")
}
