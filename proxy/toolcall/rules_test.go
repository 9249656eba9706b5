package toolcall

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/governor"
)

func TestNewRulesErrors(t *testing.T) {
	ok := Route{Host: "api.example.com", Action: "read"}
	cases := []struct {
		name  string
		route Route
		want  string // the error, after "toolcall: routes[1]."
	}{
		{"host required", Route{Action: "a"}, "match.host: required"},
		{"host with a path", Route{Host: "api.example.com/x", Action: "a"}, `match.host: "api.example.com/x": want a host name or glob, without scheme or path`},
		{"host with a scheme", Route{Host: "https://api.example.com", Action: "a"}, "match.host: "},
		{"host glob invalid", Route{Host: "api[.example.com", Action: "a"}, `match.host: "api[.example.com": syntax error in pattern`},
		{"method lower case", Route{Host: "h", Method: "get", Action: "a"}, `match.method: "get": want an upper-case HTTP method`},
		{"method unknown", Route{Host: "h", Method: "FETCH", Action: "a"}, `match.method: "FETCH"`},
		{"path not rooted", Route{Host: "h", Path: "repos/*", Action: "a"}, `match.path: "repos/*": want a glob starting with / or *`},
		{"path glob invalid", Route{Host: "h", Path: "/[a", Action: "a"}, `match.path: "/[a": syntax error in pattern`},
		{"path prefix glob invalid", Route{Host: "h", Path: `/a\/*`, Action: "a"}, `match.path: "/a\\/*": syntax error in pattern`},
		{"action required", Route{Host: "h", Action: " "}, "action: required"},
		{"reversibility unknown", Route{Host: "h", Action: "a", Reversibility: 7}, "reversibility: unknown level 7"},
		{"set_query empty name", Route{Host: "h", Action: "a", Modify: Modification{SetQuery: map[string]string{"": "x"}}}, "modify.set_query: empty parameter name"},
		{"set_headers bad name", Route{Host: "h", Action: "a", Modify: Modification{SetHeaders: map[string]string{"X Bad": "x"}}}, `modify.set_headers: "X Bad": not a valid header name`},
		{"set_headers framing header", Route{Host: "h", Action: "a", Modify: Modification{SetHeaders: map[string]string{"content-length": "0"}}}, `modify.set_headers: "content-length": a route may not set this header`},
		{"set_headers line break", Route{Host: "h", Action: "a", Modify: Modification{SetHeaders: map[string]string{"X-A": "a\r\nB: c"}}}, `modify.set_headers: "X-A": the value holds a line break or NUL`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRules([]Route{ok, tc.route})
			want := "toolcall: routes[1]." + tc.want
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v (rules %v), want an error starting %q", err, r, want)
			}
		})
	}
}

func TestNewRulesGlobErrorWraps(t *testing.T) {
	_, err := NewRules([]Route{{Host: "[", Action: "a"}})
	if !errors.Is(err, path.ErrBadPattern) {
		t.Errorf("got %v, want an error wrapping path.ErrBadPattern", err)
	}
}

func TestNewRulesValid(t *testing.T) {
	routes := []Route{
		{Host: "API.Example.com", Method: "PATCH", Path: "/a/*", Action: "x", Reversibility: governor.Reversible,
			Modify: Modification{SetQuery: map[string]string{"q": "1"}, SetHeaders: map[string]string{"X-Vigil": "1"}}},
		{Host: "*", Action: "any"},
	}
	r, err := NewRules(routes)
	if err != nil {
		t.Fatalf("got %v, want no error", err)
	}
	if got := r.Len(); got != 2 {
		t.Errorf("Len: got %d, want 2", got)
	}
	// The rules are a copy: changing the input changes nothing.
	routes[0].Modify.SetQuery["q"] = "2"
	routes[0].Action = "changed"
	got := r.Match("api.example.com", "PATCH", "/a/b")
	if got == nil || got.Action != "x" || got.Modify.SetQuery["q"] != "1" || got.Host != "api.example.com" {
		t.Errorf("got %+v, want the first route as given, host in lower case", got)
	}
}

func TestRulesMatch(t *testing.T) {
	rules, err := NewRules([]Route{
		{Host: "api.example.com", Method: "DELETE", Path: "/repos/*", Action: "delete_repo"},
		{Host: "api.example.com", Path: "/repos/*", Action: "repo"},
		{Host: "api.example.com:8443", Action: "on_8443"},
		{Host: "*.example.com", Path: "/v1/*", Action: "v1"},
		{Host: "api.example.com", Path: "/exact", Action: "exact"},
		{Host: "*", Method: "TRACE", Action: "trace"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, host, method, path string
		want                     string // the route's action, "" for none
	}{
		{"first match wins", "api.example.com", "DELETE", "/repos/a", "delete_repo"},
		{"method falls through to the next", "api.example.com", "GET", "/repos/a", "repo"},
		{"method without regard to case", "api.example.com", "delete", "/repos/a", "delete_repo"},
		{"path glob covers deeper paths", "api.example.com", "GET", "/repos/a/b/c", "repo"},
		{"host in another case", "API.EXAMPLE.COM", "GET", "/repos/a", "repo"},
		{"host without port matches any port", "api.example.com:9000", "GET", "/repos/a", "repo"},
		{"host with port", "api.example.com:8443", "GET", "/other", "on_8443"},
		{"host with port needs that port", "api.example.com:8444", "GET", "/other", ""},
		{"host glob", "eu.example.com", "POST", "/v1/x", "v1"},
		{"host glob with port", "eu.example.com:1", "POST", "/v1/x", "v1"},
		{"host glob does not match the bare domain", "example.com", "POST", "/v1/x", ""},
		{"exact path", "api.example.com", "GET", "/exact", "exact"},
		{"exact path only", "api.example.com", "GET", "/exact/more", ""},
		{"star host", "anything", "TRACE", "/", "trace"},
		{"trailing dot", "api.example.com.", "GET", "/exact", "exact"},
		{"no match", "other.org", "GET", "/", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if rt := rules.Match(tc.host, tc.method, tc.path); rt != nil {
				got = rt.Action
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNilRules(t *testing.T) {
	var r *Rules
	if got := r.Match("a", "GET", "/"); got != nil {
		t.Errorf("got %+v, want nil", got)
	}
	if got := r.Len(); got != 0 {
		t.Errorf("Len: got %d, want 0", got)
	}
}

func TestModification(t *testing.T) {
	cases := []struct {
		name      string
		m         Modification
		rawQuery  string
		wantQuery string
		wantHdr   http.Header
	}{
		{"empty changes nothing", Modification{}, "a=1", "a=1", http.Header{"X-Old": {"o"}}},
		{"set replaces every value and keeps the rest as sent",
			Modification{SetQuery: map[string]string{"dry_run": "true", "b c": "d&e"}},
			"x=%41&dry_run=false;dry_run=no&y", "x=%41&y&b+c=d%26e&dry_run=true", http.Header{"X-Old": {"o"}}},
		{"set on an empty query", Modification{SetQuery: map[string]string{"a": "1"}}, "", "a=1", http.Header{"X-Old": {"o"}}},
		{"escaped name is replaced", Modification{SetQuery: map[string]string{"a b": "2"}}, "a%20b=1", "a+b=2", http.Header{"X-Old": {"o"}}},
		{"headers replace", Modification{SetHeaders: map[string]string{"x-old": "n", "X-New": "v"}}, "", "", http.Header{"X-Old": {"n"}, "X-New": {"v"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &url.URL{Scheme: "https", Host: "h", Path: "/", RawQuery: tc.rawQuery}
			h := http.Header{"X-Old": {"o"}}
			tc.m.Apply(u, h)
			if u.RawQuery != tc.wantQuery {
				t.Errorf("query: got %q, want %q", u.RawQuery, tc.wantQuery)
			}
			if len(h) != len(tc.wantHdr) {
				t.Errorf("headers: got %v, want %v", h, tc.wantHdr)
			}
			for k, v := range tc.wantHdr {
				if got := h.Values(k); strings.Join(got, ",") != strings.Join(v, ",") {
					t.Errorf("header %s: got %v, want %v", k, got, v)
				}
			}
			if got, want := tc.m.Empty(), len(tc.m.SetQuery)+len(tc.m.SetHeaders) == 0; got != want {
				t.Errorf("Empty: got %v, want %v", got, want)
			}
		})
	}
	Modification{SetQuery: map[string]string{"a": "b"}, SetHeaders: map[string]string{"A": "b"}}.Apply(nil, nil) // no panic
}
