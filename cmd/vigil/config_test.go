package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
)

const quickstartPath = "../../examples/quickstart.yaml"

func TestLoadQuickstart(t *testing.T) {
	c, err := loadConfig(quickstartPath)
	if err != nil {
		t.Fatalf("loadConfig(%s): %v", quickstartPath, err)
	}
	if got, want := len(c.APIKeys), 3; got != want {
		t.Errorf("api keys: got %d, want %d", got, want)
	}
	roles := map[string]string{}
	for _, k := range c.APIKeys {
		roles[k.Key] = k.Principal + " " + k.Role
	}
	for key, want := range map[string]string{"k-admin": "root@example.com admin", "k-ops": "alice@example.com operator", "k-view": "auditor@example.com viewer"} {
		if got := roles[key]; got != want {
			t.Errorf("api key %s: got %q, want %q", key, got, want)
		}
	}

	cs := c.contracts()
	if got, want := len(cs), 2; got != want {
		t.Fatalf("contracts: got %d, want %d", got, want)
	}
	sb := cs[0]
	if sb.AgentID != "support-bot" || sb.Archetype != "customer-experience" || sb.Team != "support" {
		t.Errorf("support-bot: got id %q archetype %q team %q", sb.AgentID, sb.Archetype, sb.Team)
	}
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"scope", sb.Scope, []string{"read", "create", "refund"}},
		{"boundaries", sb.Boundaries, []string{"api.example.com/*", "payments/*"}},
		{"human_override", sb.HumanOverride, []string{"delete"}},
		{"sensitive_targets", sb.SensitiveTargets, []string{"payments/*"}},
		{"authority", sb.Authority, []string{"!has(action.parameters.amount) || action.parameters.amount <= 500"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("support-bot %s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if _, ok := sb.Anchors["refund"]; !ok {
		t.Errorf("support-bot anchors: got %v, want a refund anchor", sb.Anchors)
	}
	if got, want := sb.Limits, (governor.Limits{ActionsPerMinute: 120, MaxConcurrent: 10, MaxCostPerAction: 100}); got != want {
		t.Errorf("support-bot limits: got %+v, want %+v", got, want)
	}

	ob := cs[1]
	if ob.AgentID != "ops-bot" || ob.Archetype != "workflow-orchestration" || ob.Team != "platform" {
		t.Errorf("ops-bot: got id %q archetype %q team %q", ob.AgentID, ob.Archetype, ob.Team)
	}
	if got, want := ob.Scope, []string{"read", "query", "write", "deploy"}; !slices.Equal(got, want) {
		t.Errorf("ops-bot scope: got %q, want %q", got, want)
	}
	if got, want := ob.TimeWindows["deploy"], (governor.TimeWindow{StartHour: 9, EndHour: 17, Timezone: "UTC", MinIntervalSeconds: 300}); got != want {
		t.Errorf("ops-bot deploy window: got %+v, want %+v", got, want)
	}
	for _, ct := range cs {
		if err := ct.Validate(); err != nil {
			t.Errorf("contract %s: Validate: %v", ct.AgentID, err)
		}
	}

	if got, want := c.rules(), []governor.Rule{{Name: "no-bulk-export", Expr: "action.type != 'export' || action.parameters.rows <= 1000", Message: "bulk export needs a human"}}; !slices.Equal(got, want) {
		t.Errorf("rules: got %+v, want %+v", got, want)
	}
	if got, want := c.agentTokens(), map[string]string{"support-bot": "demo-support-token", "ops-bot": "demo-ops-token"}; !mapsEqual(got, want) {
		t.Errorf("agent tokens: got %v, want %v", got, want)
	}
	if len(c.Routes) != 2 || c.Routes[0].Match.Method != "POST" || c.Routes[1].Modify.SetQuery["dry_run"] != "true" {
		t.Errorf("routes: got %+v, want 2 routes, POST first, the second with set_query dry_run", c.Routes)
	}
	if !c.controlPlaneEnabled() || !c.ledgerEnabled() || !c.optimizerEnabled() {
		t.Errorf("runtime: got control plane %v ledger %v optimizer %v, want all true", c.controlPlaneEnabled(), c.ledgerEnabled(), c.optimizerEnabled())
	}
	if got, want := c.holdTimeout(), 30*time.Second; got != want {
		t.Errorf("hold timeout: got %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func() (*fileConfig, error)
	}{
		{"defaultConfig", func() (*fileConfig, error) { return defaultConfig(), nil }},
		{"empty path", func() (*fileConfig, error) { return loadConfig("") }},
		{"empty file", func() (*fileConfig, error) { return parseConfig(nil) }},
		{"comments only", func() (*fileConfig, error) { return parseConfig([]byte("# nothing\n")) }},
		{"null document", func() (*fileConfig, error) { return parseConfig([]byte("---\nnull\n")) }},
		{"version 1", func() (*fileConfig, error) { return parseConfig([]byte("version: 1\n")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.load()
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if err := c.validate(); err != nil {
				t.Errorf("validate: got %v, want nil", err)
			}
			if got := len(c.contracts()); got != 0 {
				t.Errorf("contracts: got %d, want 0", got)
			}
			if got := len(c.rules()); got != 0 {
				t.Errorf("rules: got %d, want 0", got)
			}
			if !c.controlPlaneEnabled() || !c.ledgerEnabled() || !c.optimizerEnabled() {
				t.Errorf("runtime: got %v %v %v, want all enabled", c.controlPlaneEnabled(), c.ledgerEnabled(), c.optimizerEnabled())
			}
			if got, want := c.holdTimeout(), 30*time.Second; got != want {
				t.Errorf("hold timeout: got %v, want %v", got, want)
			}
			if c.Version == nil || *c.Version != 1 {
				t.Errorf("version: got %v, want 1", c.Version)
			}
		})
	}
}

func TestParseSettings(t *testing.T) {
	c, err := parseConfig([]byte(`
runtime: {enable_ledger: false}
proxy: {hold_timeout_seconds: 5, default_agent: side}
agents:
  - {id: side, archetype: general-purpose}
routes:
  - {match: {host: "*.example.com", method: delete}, action: delete_thing}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.controlPlaneEnabled() || c.ledgerEnabled() || !c.optimizerEnabled() {
		t.Errorf("runtime: got %v %v %v, want true false true", c.controlPlaneEnabled(), c.ledgerEnabled(), c.optimizerEnabled())
	}
	if got, want := c.holdTimeout(), 5*time.Second; got != want {
		t.Errorf("hold timeout: got %v, want %v", got, want)
	}
	if got, want := c.Routes[0].Match.Method, "DELETE"; got != want {
		t.Errorf("method: got %q, want %q", got, want)
	}
	if got := c.agentTokens(); len(got) != 0 {
		t.Errorf("agent tokens: got %v, want none (the default agent has no token)", got)
	}
}

// agent is a valid agent entry for the refusal cases.
const agent = "agents:\n  - id: a1\n    token: t1\n"

func TestParseRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want string // a substring of the error
	}{
		{"unknown top-level key", "version: 1\nscoop: 1\n", `config: line 2: unknown key "scoop"`},
		{"unknown top-level key suggestion", "agent: []\n", `unknown key "agent" (did you mean "agents"?)`},
		{"unknown nested key", agent + "    scoop: [read]\n", `config: line 4: agents[0]: unknown key "scoop" (did you mean "scope"?)`},
		{"unknown key in flow mapping", "proxy: {hold_timeout: 3}\n", `config: line 1: proxy: unknown key "hold_timeout" (did you mean "hold_timeout_seconds"?)`},
		{"unknown key in route", "routes:\n  - match: {host: h, verb: GET}\n    action: x\n", `config: line 2: routes[0].match: unknown key "verb"`},
		{"bad type", "runtime: {}\nproxy:\n  hold_timeout_seconds: x\n", `config: line 3: proxy.hold_timeout_seconds: cannot unmarshal !!str "x" into int`},
		{"bad type list", agent + "    scope: read\n", `config: line 4: agents[0].scope: cannot unmarshal !!str "read" into a list`},
		{"bad type bool", "runtime:\n  enable_ledger: maybe\n", `config: line 2: runtime.enable_ledger: cannot unmarshal !!str "maybe" into bool`},
		{"not a mapping", "- a\n", `config: line 1: cannot unmarshal !!seq into a mapping`},
		{"duplicate yaml key", agent + "    token: t2\n", `config: line 4: agents[0]: duplicate key "token" (first at line 3)`},
		{"syntax error", "agents:\n  - id: a\n   token: x\n", `config: line 1: did not find expected '-' indicator`},
		{"syntax error with line", "a: b: c\nd: [\n", `config: `},
		{"tab indentation", "proxy:\n\thold_timeout_seconds: 3\n", `config: line 2: found character that cannot start any token`},
		{"two documents", "version: 1\n---\nversion: 1\n", `config: line 2: a second YAML document`},
		{"version 2", "version: 2\nsomething_new: 1\n", `config: line 1: version: unsupported version 2 (this build of vigil reads version 1)`},
		{"version 0", "version: 0\n", `version: unsupported version 0`},

		{"bad role", "api_keys:\n  - {key: k, principal: p, role: root}\n", `config: line 2: api_keys[0].role: unknown role "root" (want viewer, operator or admin)`},
		{"missing role", "api_keys:\n  - {key: k, principal: p}\n", `api_keys[0].role: required`},
		{"missing key", "api_keys:\n  - {principal: p, role: admin}\n", `api_keys[0].key: required`},
		{"missing principal", "api_keys:\n  - {key: k, role: admin}\n", `api_keys[0].principal: required`},
		{"duplicate api key", "api_keys:\n  - {key: k, principal: p, role: admin}\n  - {key: k, principal: q, role: viewer}\n", `config: line 3: api_keys[1].key: duplicate key (the same as api_keys[0].key)`},

		{"missing agent id", "agents:\n  - {token: t}\n", `config: line 2: agents[0].id: required`},
		{"agent id with colon", "agents:\n  - {id: 'a:b', token: t}\n", `agents[0].id: agent id "a:b" must not contain ':'`},
		{"duplicate agent id", agent + "  - id: a1\n    token: t2\n", `config: line 4: agents[1].id: duplicate agent id "a1" (also agents[0])`},
		{"unknown archetype", agent + "    archetype: finacial-analyst\n", `config: line 4: agents[0].archetype: unknown archetype "finacial-analyst" (did you mean "financial-analyst"?)`},
		{"bad CEL in authority", agent + "  - id: a2\n    token: t2\n    authority:\n      - \"true\"\n      - \"action.parameters.amount <=\"\n", `config: line 8: agents[1].authority[1]: invalid CEL expression`},
		{"authority not bool", agent + "    authority: [\"1 + 2\"]\n", `config: line 4: agents[0].authority[0]: CEL expression "1 + 2" yields int, want bool`},
		{"bad boundary glob", agent + "    boundaries: [\"api/[\"]\n", `agents[0].boundaries[0]: bad glob`},
		{"bad time window", agent + "    time_windows:\n      deploy: {start_hour: 25}\n", `config: line 5: agents[0].time_windows.deploy.start_hour: must be 0..23`},
		{"bad time zone", agent + "    time_windows:\n      deploy: {timezone: Mars/Olympus}\n", `agents[0].time_windows.deploy.timezone: unknown time zone "Mars/Olympus"`},
		{"negative limit", agent + "    limits: {max_concurrent: -1}\n", `agents[0].limits.max_concurrent: must not be negative`},
		{"missing token", "agents:\n  - id: a1\n", `config: line 2: agents[0].token: required: an agent without a token cannot authenticate through Proxy-Authorization`},
		{"missing token, other agent is default", "proxy: {default_agent: a1}\nagents:\n  - id: a1\n  - id: a2\n", `agents[1].token: required`},
		{"default_agent not configured", agent + "proxy: {default_agent: ghost}\n", `config: line 4: proxy.default_agent: "ghost" is not a configured agent`},
		{"hold timeout zero", "proxy: {hold_timeout_seconds: 0}\n", `proxy.hold_timeout_seconds: must be between 1 and 3600, got 0`},
		{"hold timeout too long", "proxy: {hold_timeout_seconds: 3601}\n", `proxy.hold_timeout_seconds: must be between 1 and 3600, got 3601`},

		{"route without host", "routes:\n  - {match: {path: /x}, action: a}\n", `config: line 2: routes[0].match.host: required`},
		{"route bad method", "routes:\n  - {match: {host: h, method: FETCH}, action: a}\n", `routes[0].match.method: unknown HTTP method "FETCH"`},
		{"route bad glob", "routes:\n  - match: {host: h, path: \"/repos/[\"}\n    action: a\n", `config: line 2: routes[0].match.path: bad glob "/repos/["`},
		{"route without action", "routes:\n  - {match: {host: h}}\n", `routes[0].action: required`},
		{"route bad reversibility", "routes:\n  - match: {host: h}\n    action: a\n    reversibility: permanent\n", `config: line 4: routes[0].reversibility: unknown reversibility "permanent"`},
		{"route empty query key", "routes:\n  - {match: {host: h}, action: a, modify: {set_query: {'': x}}}\n", `routes[0].modify.set_query[""]: empty parameter name`},
		{"optimizer unknown interventions mode", "optimizer: {interventions: sometimes}\n", `optimizer.interventions: must be off, recommend or auto, got "sometimes"`},
		{"optimizer check interval out of range", "optimizer: {check_interval_seconds: 0}\n", `optimizer.check_interval_seconds: must be between 1 and 3600, got 0`},
		{"optimizer unknown key", "optimizer: {interval: 5}\n", `optimizer: unknown key "interval"`},
		{"route path without slash", "routes:\n  - {match: {host: h, path: repos}, action: a}\n", `routes[0].match.path: "repos": want a glob starting with / or *`},
		{"route sets a hop-by-hop header", "routes:\n  - {match: {host: h}, action: a, modify: {set_headers: {Content-Length: '0'}}}\n", `routes[0].modify.set_headers`},
		{"route bad header name", "routes:\n  - {match: {host: h}, action: a, modify: {set_headers: {'X Bad': x}}}\n", `routes[0].modify.set_headers["X Bad"]: invalid header name`},
		{"route header value line break", "routes:\n  - {match: {host: h}, action: a, modify: {set_headers: {X-A: \"a\\r\\nB: c\"}}}\n", `routes[0].modify.set_headers.X-A: header value contains a line break`},

		{"rule bad CEL", "rules:\n  - {name: r1, expr: \"action.type ==\"}\n", `config: line 2: rules[0].expr: invalid CEL expression`},
		{"rule without name", "rules:\n  - {expr: \"true\"}\n", `rules[0].name: required`},
		{"rule without expr", "rules:\n  - {name: r1}\n", `rules[0].expr: required`},
		{"duplicate rule", "rules:\n  - {name: r1, expr: \"true\"}\n  - {name: r1, expr: \"true\"}\n", `config: line 3: rules[1].name: duplicate rule name "r1" (also rules[0])`},

		{"bad port", "server:\n  port: 0\n", `config: line 2: server.port: must be between 1 and 65535, got 0`},
		{"bad proxy port", "server: {proxy_port: 70000}\n", `server.proxy_port: must be between 1 and 65535, got 70000`},
		{"bad redis scheme", "server: {redis_url: \"http://localhost:6379\"}\n", `server.redis_url: scheme "http": want redis:// or rediss://`},
		{"bad redis db", "server: {redis_url: \"redis://localhost:6379/zero\"}\n", `server.redis_url: database "zero"`},
		{"redis without host", "server: {redis_url: \"redis://\"}\n", `server.redis_url: missing host`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("got config %+v, want an error containing %q", c, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error\n%v\nwant it to contain\n%s", err, tc.want)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := parseConfig([]byte(`rules:
  - {name: r1, expr: "action.type =="}
agents:
  - id: a1
    archetype: finacial-analyst
server: {port: 0}
`))
	var ce *configError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want *configError", err)
	}
	var lines []string
	for l := range strings.Lines(err.Error()) {
		if strings.HasPrefix(l, "config: ") {
			lines = append(lines, l)
		}
	}
	want := []string{"line 2: rules[0].expr", "line 4: agents[0].token", "line 5: agents[0].archetype", "line 6: server.port"}
	if len(lines) != len(want) {
		t.Fatalf("got %d problems:\n%v\nwant %d", len(lines), err, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], "config: "+w+": ") {
			t.Errorf("problem %d: got %q, want it to start with %q", i, lines[i], "config: "+w)
		}
	}
}

func TestParseFlowStylePaths(t *testing.T) {
	_, err := parseConfig([]byte("agents: [{id: a, token: t, scoop: 1}, {id: b, token: t, scoop: 1}, {id: c, token: t, limits: {max_concurrent: x}}]\n"))
	want := []string{
		`config: line 1: agents[0]: unknown key "scoop" (did you mean "scope"?)`,
		`config: line 1: agents[1]: unknown key "scoop" (did you mean "scope"?)`,
		`config: line 1: agents[2].limits.max_concurrent: cannot unmarshal !!str "x" into int`,
	}
	if got := fmt.Sprint(err); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

func TestParseBoundsReportedProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
	}{
		{"decoding", "agents: [" + strings.Repeat("{zz: 1},", 200) + "]\n"},
		{"validation", "agents: [" + strings.Repeat("{},", 200) + "]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig([]byte(tc.yaml))
			if err == nil {
				t.Fatal("got no error, want one")
			}
			msg := err.Error()
			if got, want := strings.Count(msg, "\n")+1, maxReported+1; got != want {
				t.Errorf("got %d lines, want %d", got, want)
			}
			if !strings.HasSuffix(msg, "more problems not shown") {
				t.Errorf("got %q at the end, want the count of problems not shown", msg[max(0, len(msg)-60):])
			}
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxConfigBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "nope.yaml"), "config: open "},
		{"directory", dir, "config: read "},
		{"too large", big, "config: file is larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestServeSettings(t *testing.T) {
	file, err := parseConfig([]byte(`server:
  host: 10.0.0.1
  port: 9000
  proxy_port: 9001
  redis_url: redis://file:6379/0
  ui: true
`))
	if err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == "VIGIL_REDIS_URL" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name   string
		cfg    *fileConfig
		args   []string
		getenv func(string) string
		want   serveSettings
	}{
		{"defaults", defaultConfig(), nil, nil, defaultServeSettings()},
		{"file over defaults", file, nil, nil, serveSettings{Host: "10.0.0.1", Port: 9000, ProxyHost: "127.0.0.1", ProxyPort: 9001, DataDir: "./vigil-data", RedisURL: "redis://file:6379/0", UI: true}},
		{"flags over file", file, []string{"--port", "7000", "--ui=false", "--redis-url", "redis://flag:1", "--metrics"}, env("redis://env:1"),
			serveSettings{Host: "10.0.0.1", Port: 7000, ProxyHost: "127.0.0.1", ProxyPort: 9001, DataDir: "./vigil-data", RedisURL: "redis://flag:1", Metrics: true}},
		{"env over file", file, nil, env("redis://env:1"), serveSettings{Host: "10.0.0.1", Port: 9000, ProxyHost: "127.0.0.1", ProxyPort: 9001, DataDir: "./vigil-data", RedisURL: "redis://env:1", UI: true}},
		{"flag equal to default still wins", file, []string{"--port=8420"}, nil, serveSettings{Host: "10.0.0.1", Port: 8420, ProxyHost: "127.0.0.1", ProxyPort: 9001, DataDir: "./vigil-data", RedisURL: "redis://file:6379/0", UI: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			s := defaultServeSettings()
			s.registerFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got := tc.cfg.serveSettings(fs, s, tc.getenv)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if err := got.validate(); err != nil {
				t.Errorf("validate: got %v, want nil", err)
			}
		})
	}
}

func TestServeSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*serveSettings)
		want string
	}{
		{"port", func(s *serveSettings) { s.Port = 0 }, "serve: port: must be between 1 and 65535, got 0"},
		{"proxy port", func(s *serveSettings) { s.ProxyPort = 65536 }, "serve: proxy port: must be between 1 and 65535, got 65536"},
		{"redis", func(s *serveSettings) { s.RedisURL = "localhost:6379" }, "serve: redis URL: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultServeSettings()
			tc.edit(&s)
			if err := s.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestRedisURLMessageHidesPassword(t *testing.T) {
	for _, u := range []string{"http://user:hunter2@host:6379", "redis://user:hunter2@host:port/0", "redis://:hunter2@host:6379/x"} {
		if msg := checkRedisURL(u); msg == "" || strings.Contains(msg, "hunter2") {
			t.Errorf("checkRedisURL(%q): got %q, want a refusal without the password", u, msg)
		}
	}
}

func TestContractsShareNothing(t *testing.T) {
	c, err := loadConfig(quickstartPath)
	if err != nil {
		t.Fatal(err)
	}
	cs := c.contracts()
	cs[0].Scope[0] = "changed"
	cs[0].Anchors["refund"] = "changed"
	cs[1].TimeWindows["deploy"] = governor.TimeWindow{}
	if c.Agents[0].Scope[0] != "read" || c.Agents[0].Anchors["refund"] == "changed" || c.Agents[1].TimeWindows["deploy"].StartHour != 9 {
		t.Errorf("contracts() shares memory with the config: got %+v", c.Agents)
	}
}

func TestLedgerDurability(t *testing.T) {
	cases := []struct {
		name, yaml, wantErr string
	}{
		{"absent is sync", "", ""},
		{"sync", "ledger: {durability: sync}\n", ""},
		{"process", "ledger: {durability: process}\n", ""},
		{"unknown mode", "ledger: {durability: fast}\n", "ledger.durability"},
		{"unknown key", "ledger: {durable: sync}\n", `unknown key "durable"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig([]byte(tc.yaml))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}
