package toolcall

import (
	"encoding/json"
	"testing"

	"github.com/vigilhq/vigil/governor"
)

// testRoutes is the route table of the parse tests and the golden files.
var testRoutes = []Route{
	{Host: "api.example.com", Method: "DELETE", Path: "/repos/*", Action: "delete_repo", Target: "github/repos",
		Reversibility: governor.Irreversible, Modify: Modification{SetQuery: map[string]string{"dry_run": "true"}}},
	{Host: "mcp.example.com", Path: "/mcp", Action: "mcp", Target: "crm", Reversibility: governor.Compensable},
	{Host: "pay.example.com:8443", Action: "charge", Target: "payments/charges"},
	{Host: "*.internal", Method: "POST", Action: "internal_write"},
	{Host: "api.example.com", Path: "/repos/*", Action: "repo_access"},
}

func testRules(t testing.TB) *Rules {
	t.Helper()
	r, err := NewRules(testRoutes)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// callView is a Call as the tests compare and the golden files show it.
type callView struct {
	Kind     string        `json:"kind"`
	Batch    bool          `json:"batch,omitempty"`
	Route    string        `json:"route,omitempty"` // the route's action
	Messages []messageView `json:"messages"`
}

type messageView struct {
	ID     string      `json:"id,omitempty"`
	RPC    string      `json:"rpc,omitempty"`
	Tool   string      `json:"tool,omitempty"`
	Action *actionView `json:"action,omitempty"`
}

type actionView struct {
	Type          string         `json:"type"`
	Target        string         `json:"target"`
	Parameters    map[string]any `json:"parameters"`
	Source        string         `json:"source"`
	Method        string         `json:"method"`
	Reversibility string         `json:"reversibility,omitempty"`
}

func viewOf(c Call) callView {
	v := callView{Kind: c.Kind.String(), Batch: c.Batch, Messages: []messageView{}}
	if c.Route != nil {
		v.Route = c.Route.Action
	}
	for _, m := range c.Messages {
		mv := messageView{ID: string(m.ID), RPC: m.RPC, Tool: m.Tool}
		if a := m.Action; a != nil {
			mv.Action = &actionView{Type: a.Type, Target: a.Target, Parameters: a.Parameters, Source: a.Source,
				Method: a.Method, Reversibility: a.Reversibility.String()}
		}
		v.Messages = append(v.Messages, mv)
	}
	return v
}

func (v callView) String() string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// act is an action seen by the proxy.
func act(method, typ, target string, params map[string]any) *actionView {
	if params == nil {
		params = map[string]any{}
	}
	return &actionView{Type: typ, Target: target, Parameters: params, Source: "proxy", Method: method}
}

func (a *actionView) rev(r governor.Reversibility) *actionView {
	a.Reversibility = r.String()
	return a
}

// httpCall is the view of a KindHTTP call.
func httpCall(route string, a *actionView) callView {
	return callView{Kind: "http", Route: route, Messages: []messageView{{Action: a}}}
}

// mcpCall is the view of a KindMCP call.
func mcpCall(route string, batch bool, msgs ...messageView) callView {
	return callView{Kind: "mcp", Batch: batch, Route: route, Messages: msgs}
}

// post is a POST of body to url parts.
func post(host, path, body string) Request {
	return Request{Method: "POST", Scheme: "http", Host: host, Path: path, ContentType: "application/json", Body: []byte(body)}
}
