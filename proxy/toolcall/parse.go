package toolcall

import (
	"path"
	"strings"

	"github.com/vigilhq/vigil/governor"
)

// Parse turns a request into a call: an MCP message or batch, or a plain HTTP
// action (API.md section 4). A CONNECT request is ParseConnect of its host.
// Parse never fails: what is not MCP is governed as plain HTTP.
func Parse(r Request, rules *Rules) Call {
	method := upperMethod(r.Method)
	if method == "CONNECT" {
		return ParseConnect(r.Host)
	}
	p := cleanPath(r.Path)
	route := rules.Match(r.Host, method, p)
	tgt := targetHost(r.Host, r.Scheme) + p

	body, isJSON := []byte(nil), false
	if startsContainer(r.Body) {
		body, isJSON = firstValue(r.Body)
	}
	if method == "POST" && isJSON {
		if c, ok := parseMCP(body, mcpEnv{method: r.Method, target: tgt, route: route}); ok {
			return c
		}
	}
	if r.SessionID != "" && (method == "GET" || method == "DELETE") {
		// The MCP event stream and the end of a session.
		return Call{Kind: KindMCP, Messages: []Message{{}}, Route: route}
	}

	a := &governor.Action{Target: tgt, Source: "proxy", Method: r.Method}
	if route != nil {
		a.Type, a.Reversibility = route.Action, route.Reversibility
		if route.Target != "" {
			a.Target = route.Target
		}
	} else {
		a.Type = methodType(method)
	}
	a.Parameters = httpParams(r, body, isJSON)
	return Call{Kind: KindHTTP, Messages: []Message{{Action: a}}, Route: route}
}

// ParseConnect is the call of a CONNECT tunnel that is not intercepted: one
// action of type "connect" on host:port.
func ParseConnect(hostport string) Call {
	name, port, _ := splitHostPort(strings.ToLower(hostport))
	tgt := strings.TrimSuffix(name, ".")
	if port != "" {
		tgt = joinHostPort(tgt, port)
	}
	a := &governor.Action{Type: "connect", Target: tgt, Parameters: map[string]any{}, Source: "proxy", Method: "CONNECT"}
	return Call{Kind: KindConnect, Messages: []Message{{Action: a}}}
}

// methodType is the action type of a request no route matches.
func methodType(method string) string {
	switch method {
	case "GET", "HEAD":
		return "read"
	case "POST":
		return "create"
	case "PUT", "PATCH":
		return "update"
	case "DELETE":
		return "delete"
	}
	return strings.ToLower(method)
}

// upperMethod returns the method in upper case (methods are compared without
// regard to case, so that "delete" is governed as DELETE) and "GET" for "",
// as net/http reads it.
func upperMethod(m string) string {
	if m == "" {
		return "GET"
	}
	for i := 0; i < len(m); i++ {
		if 'a' <= m[i] && m[i] <= 'z' {
			return strings.ToUpper(m)
		}
	}
	return m
}

// cleanPath returns the path as the upstream resolves it: rooted, with "."
// and ".." segments and repeated slashes removed, keeping a trailing slash,
// so that "/public/../admin" is not governed as a path under /public.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if c == p || p[len(p)-1] != '/' || c == "/" {
		return c
	}
	if c == p[:len(p)-1] {
		return p
	}
	return c + "/"
}

// targetHost returns host[:port] as targets name it: in lower case, without a
// trailing dot, and without the scheme's default port, so that one origin
// has one name.
func targetHost(hostport, scheme string) string {
	name, port, _ := splitHostPort(hostport)
	defaultPort := (port == "80" && strings.EqualFold(scheme, "http")) || (port == "443" && strings.EqualFold(scheme, "https"))
	if !defaultPort && !needsLower(name) && !strings.HasSuffix(name, ".") {
		return hostport
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	switch {
	case port != "" && !defaultPort:
		return joinHostPort(name, port)
	case strings.Contains(name, ":"):
		return "[" + name + "]"
	}
	return name
}

func needsLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' || s[i] >= 0x80 {
			return true
		}
	}
	return false
}

// splitHostPort splits host[:port]; an IPv6 literal loses its brackets. ok is
// false when hostport has no port.
func splitHostPort(hostport string) (host, port string, ok bool) {
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return hostport, "", false
		}
		host, rest := hostport[1:end], hostport[end+1:]
		if p, ok := strings.CutPrefix(rest, ":"); ok {
			return host, p, true
		}
		return host, "", false
	}
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 || strings.IndexByte(hostport, ':') != i {
		return hostport, "", false // no port, or an IPv6 literal without brackets
	}
	return hostport[:i], hostport[i+1:], true
}

// joinHostPort is the inverse of splitHostPort.
func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
