package toolcall

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/vigilhq/vigil/governor"
)

// Route is one route rule (API.md section 7, `routes:`): which requests it
// matches and what action they are.
type Route struct {
	// Host is a glob (governor.MatchGlob) matched against the request's host
	// without its port and, when the request names a port, against host:port.
	// Required. Hosts are compared in lower case.
	Host string
	// Method is an upper-case HTTP method; "" matches any.
	Method string
	// Path is a glob (governor.MatchGlob) on the URL path; "" matches any.
	Path string
	// Action is the action type. Required.
	Action string
	// Target is the action's target; "" means host + path.
	Target string
	// Reversibility declares the action's level; 0 lets the governor derive it.
	Reversibility governor.Reversibility
	// Modify is what a MODIFY verdict changes in the forwarded request.
	Modify Modification
}

// Rules is an immutable, validated list of routes; the first match wins. A
// nil *Rules matches nothing.
type Rules struct {
	routes []Route
}

var knownMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"}

// RouteError is NewRules' refusal of one route: its index, the offending
// key ("match.host", "modify.set_headers.Host", ...) and why.
type RouteError struct {
	Index int
	Field string
	Err   error
}

func (e *RouteError) Error() string {
	return fmt.Sprintf("toolcall: routes[%d].%s: %v", e.Index, e.Field, e.Err)
}

func (e *RouteError) Unwrap() error { return e.Err }

// NewRules validates routes and copies them (maps included) into Rules.
// Errors name the route and the key: "toolcall: routes[2].match.host: ...".
func NewRules(routes []Route) (*Rules, error) {
	r := &Rules{routes: make([]Route, len(routes))}
	for i, rt := range routes {
		if field, err := validateRoute(&rt); err != nil {
			return nil, &RouteError{Index: i, Field: field, Err: err}
		}
		rt.Host = strings.ToLower(rt.Host)
		rt.Modify = Modification{SetQuery: maps.Clone(rt.Modify.SetQuery), SetHeaders: maps.Clone(rt.Modify.SetHeaders)}
		r.routes[i] = rt
	}
	return r, nil
}

// validateRoute returns the offending key and why.
func validateRoute(rt *Route) (string, error) {
	switch {
	case rt.Host == "":
		return "match.host", fmt.Errorf("required")
	case strings.Contains(rt.Host, "/"):
		return "match.host", fmt.Errorf("%q: want a host name or glob, without scheme or path", rt.Host)
	}
	if err := validGlob(rt.Host); err != nil {
		return "match.host", err
	}
	if rt.Method != "" && !slices.Contains(knownMethods, rt.Method) {
		return "match.method", fmt.Errorf("%q: want an upper-case HTTP method (%s) or nothing for any", rt.Method, strings.Join(knownMethods, ", "))
	}
	if rt.Path != "" {
		if !strings.HasPrefix(rt.Path, "/") && !strings.HasPrefix(rt.Path, "*") {
			return "match.path", fmt.Errorf("%q: want a glob starting with / or *", rt.Path)
		}
		if err := validGlob(rt.Path); err != nil {
			return "match.path", err
		}
	}
	if strings.TrimSpace(rt.Action) == "" {
		return "action", fmt.Errorf("required")
	}
	if rt.Reversibility > governor.Irreversible {
		return "reversibility", fmt.Errorf("unknown level %d", rt.Reversibility)
	}
	return rt.Modify.validate()
}

// validGlob checks pattern with path.Match syntax, and the prefix that
// governor.MatchGlob also tries for a pattern ending in "/*".
func validGlob(pattern string) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return fmt.Errorf("%q: %w", pattern, err)
	}
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		if _, err := path.Match(prefix, ""); err != nil {
			return fmt.Errorf("%q: %w", pattern, err)
		}
	}
	return nil
}

// Len returns the number of routes.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.routes)
}

// Match returns the first route matching a request, or nil. host is the
// request's host[:port]; method is compared without regard to case; urlPath
// should be clean (Parse passes the path it puts in targets).
func (r *Rules) Match(host, method, urlPath string) *Route {
	if r == nil || len(r.routes) == 0 {
		return nil
	}
	name, port, _ := splitHostPort(strings.ToLower(host))
	name = strings.TrimSuffix(name, ".")
	var withPort string
	if port != "" {
		withPort = joinHostPort(name, port)
	}
	for i := range r.routes {
		rt := &r.routes[i]
		if rt.Method != "" && !strings.EqualFold(rt.Method, method) {
			continue
		}
		if !governor.MatchGlob(rt.Host, name) && (withPort == "" || !governor.MatchGlob(rt.Host, withPort)) {
			continue
		}
		if rt.Path != "" && !governor.MatchGlob(rt.Path, urlPath) {
			continue
		}
		return rt
	}
	return nil
}
