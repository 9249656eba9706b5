package main

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// configError is one problem of the configuration file. Path is the key path
// (`agents[1].authority[0]`, empty for the file as a whole); Line is the
// line in the file, 0 when unknown.
type configError struct {
	Line int
	Path string
	Msg  string
}

// Error reads "config: line 12: agents[1].authority[0]: message", leaving
// out what is unknown.
func (e *configError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// validate reports every problem of c, each as a *configError, joined with
// errors.Join; nil when c is usable. It does not change c.
func (c *fileConfig) validate() error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, &configError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}

	if c.Version != nil && *c.Version != configVersion {
		add("version", "%s", unsupportedVersion(*c.Version))
		return errors.Join(errs...)
	}

	// server
	if c.Server.Port != nil {
		if msg := checkPort(*c.Server.Port); msg != "" {
			add("server.port", "%s", msg)
		}
	}
	if c.Server.ProxyPort != nil {
		if msg := checkPort(*c.Server.ProxyPort); msg != "" {
			add("server.proxy_port", "%s", msg)
		}
	}
	if c.Server.RedisURL != "" {
		if msg := checkRedisURL(c.Server.RedisURL); msg != "" {
			add("server.redis_url", "%s", msg)
		}
	}

	// api_keys
	keys := map[string]int{}
	for i, k := range c.APIKeys {
		p := fmt.Sprintf("api_keys[%d]", i)
		switch j, dup := keys[k.Key]; {
		case k.Key == "":
			add(p+".key", "required")
		case strings.TrimSpace(k.Key) != k.Key || strings.ContainsFunc(k.Key, unicode.IsControl):
			add(p+".key", "must not have surrounding spaces or control characters")
		case dup:
			add(p+".key", "duplicate key (the same as api_keys[%d].key)", j)
		default:
			keys[k.Key] = i
		}
		if strings.TrimSpace(k.Principal) == "" {
			add(p+".principal", "required")
		}
		switch k.Role {
		case "viewer", "operator", "admin":
		case "":
			add(p+".role", "required (viewer, operator or admin)")
		default:
			add(p+".role", "unknown role %q (want viewer, operator or admin)", k.Role)
		}
	}

	// proxy
	switch c.Optimizer.Interventions {
	case "", "off", "recommend", "auto":
	default:
		add("optimizer.interventions", "must be off, recommend or auto, got %q", c.Optimizer.Interventions)
	}
	if n := c.Optimizer.CheckIntervalSeconds; n != nil && (*n < 1 || *n > 3600) {
		add("optimizer.check_interval_seconds", "must be between 1 and 3600, got %d", *n)
	}
	switch c.Ledger.Durability {
	case "", "sync", "process":
	default:
		add("ledger.durability", "must be sync or process, got %q", c.Ledger.Durability)
	}
	if t := c.Proxy.HoldTimeoutSeconds; t != nil && (*t < 1 || *t > maxHoldTimeoutSeconds) {
		add("proxy.hold_timeout_seconds", "must be between 1 and %d, got %d", maxHoldTimeoutSeconds, *t)
	}

	// agents
	ids := map[string]int{}
	for i := range c.Agents {
		a := &c.Agents[i]
		p := fmt.Sprintf("agents[%d]", i)
		switch j, dup := ids[a.ID]; {
		case strings.TrimSpace(a.ID) == "":
			add(p+".id", "required")
		case strings.ContainsFunc(a.ID, badIDRune):
			add(p+".id", "agent id %q must not contain ':', '/', '?', '#', '%%', spaces or control characters (it is the user name of Proxy-Authorization and a URL path segment)", a.ID)
		case dup:
			add(p+".id", "duplicate agent id %q (also agents[%d])", a.ID, j)
		default:
			ids[a.ID] = i
		}
		if a.Token == "" && (c.Proxy.DefaultAgent == "" || a.ID != c.Proxy.DefaultAgent) {
			add(p+".token", "required: an agent without a token cannot authenticate through Proxy-Authorization (only the agent named by proxy.default_agent may omit it)")
		}
		for _, typ := range slices.Sorted(maps.Keys(a.TimeWindows)) {
			if strings.TrimSpace(typ) == "" {
				add(p+".time_windows", "empty action type")
			}
		}
		ct := a.contract()
		if err := ct.Validate(); err != nil {
			var fe *governor.FieldError
			switch {
			case errors.As(err, &fe) && fe.Field == "id":
				// Reported above.
			case errors.As(err, &fe):
				add(p+"."+fe.Field, "%s", fe.Msg)
			default:
				add(p, "%v", err)
			}
		}
	}
	if d := c.Proxy.DefaultAgent; d != "" {
		if _, ok := ids[d]; !ok {
			add("proxy.default_agent", "%q is not a configured agent", d)
		}
	}

	// routes
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		before := len(errs)
		if strings.TrimSpace(r.Match.Host) == "" {
			add(p+".match.host", "required")
		} else if _, err := path.Match(r.Match.Host, ""); err != nil {
			add(p+".match.host", "bad glob %q: %v", r.Match.Host, err)
		}
		if m := r.Match.Method; m != "" && !slices.Contains(httpMethods, strings.ToUpper(m)) {
			add(p+".match.method", "unknown HTTP method %q (want one of %s)", m, strings.Join(httpMethods, ", "))
		}
		if r.Match.Path != "" {
			if _, err := path.Match(r.Match.Path, ""); err != nil {
				add(p+".match.path", "bad glob %q: %v", r.Match.Path, err)
			}
		}
		if strings.TrimSpace(r.Action) == "" {
			add(p+".action", "required")
		}
		if _, err := governor.ParseReversibility(r.Reversibility); err != nil {
			add(p+".reversibility", "%v", err)
		}
		for _, k := range slices.Sorted(maps.Keys(r.Modify.SetQuery)) {
			if k == "" {
				add(keyPath(p+".modify.set_query", k), "empty parameter name")
			}
		}
		for _, k := range slices.Sorted(maps.Keys(r.Modify.SetHeaders)) {
			if !validHeaderName(k) {
				add(keyPath(p+".modify.set_headers", k), "invalid header name %q", k)
			} else if strings.ContainsAny(r.Modify.SetHeaders[k], "\r\n\x00") {
				add(keyPath(p+".modify.set_headers", k), "header value contains a line break or NUL")
			}
		}
		if len(errs) == before {
			// What the proxy's own validation refuses beyond the checks
			// above (hop-by-hop headers in set_headers, a path without a
			// leading slash, ...), named the same way.
			rt := c.routes()[i]
			var re *toolcall.RouteError
			if _, err := toolcall.NewRules([]toolcall.Route{rt}); errors.As(err, &re) {
				add(p+"."+re.Field, "%v", re.Err)
			}
		}
	}

	// rules
	names := map[string]int{}
	for i, r := range c.Rules {
		p := fmt.Sprintf("rules[%d]", i)
		switch j, dup := names[r.Name]; {
		case strings.TrimSpace(r.Name) == "":
			add(p+".name", "required")
		case dup:
			add(p+".name", "duplicate rule name %q (also rules[%d])", r.Name, j)
		default:
			names[r.Name] = i
		}
		if strings.TrimSpace(r.Expr) == "" {
			add(p+".expr", "required")
		} else if _, err := governor.CompileInvariant(r.Name, r.Expr, r.Message); err != nil {
			add(p+".expr", "%v", err)
		}
	}
	return errors.Join(errs...)
}

func unsupportedVersion(v int) string {
	return fmt.Sprintf("unsupported version %d (this build of vigil reads version %d)", v, configVersion)
}

// checkPort returns what is wrong with a TCP port, or "".
func checkPort(p int) string {
	if p < 1 || p > 65535 {
		return fmt.Sprintf("must be between 1 and 65535, got %d", p)
	}
	return ""
}

// checkRedisURL returns what is wrong with a Redis URL, or "". The message
// never repeats the URL's password.
func checkRedisURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Sprintf("not a URL: %v", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Sprintf("scheme %q: want redis:// or rediss:// (redis://host:port/db)", u.Scheme)
	}
	if u.Host == "" {
		return "missing host (redis://host:port/db)"
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return fmt.Sprintf("database %q: want a number (redis://host:port/db)", db)
		}
	}
	return ""
}

// badIDRune reports the runes an agent id must not hold: it is the user name
// of Proxy-Authorization (no ':') and a path segment of the admin API.
func badIDRune(r rune) bool {
	return strings.ContainsRune(":/?#%", r) || unicode.IsSpace(r) || unicode.IsControl(r)
}

// validHeaderName reports whether s is an HTTP field name (RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
