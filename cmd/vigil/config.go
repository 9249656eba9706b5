package main

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// This file holds the YAML configuration file of API.md section 7 as a
// versioned DTO (fileConfig) and its conversion into the packages' own types.
// Decoding and error reporting are in config_parse.go, the checks in
// config_validate.go. Nothing outside cmd/vigil sees these types.

// configVersion is the only version of the file this build reads; a file
// without `version` is version 1.
const configVersion = 1

const (
	defaultHoldTimeoutSeconds = 30
	maxHoldTimeoutSeconds     = 3600
)

// fileConfig is the configuration file. Pointer fields distinguish "absent"
// (nil: the default applies) from an explicit zero; parseConfig fills the
// defaults in, so a parsed or default config has them all set.
type fileConfig struct {
	Version *int           `yaml:"version"`
	Runtime runtimeConfig  `yaml:"runtime"`
	Server  serverConfig   `yaml:"server"`
	APIKeys []apiKeyConfig `yaml:"api_keys"`
	Proxy   proxyConfig    `yaml:"proxy"`
	Ledger  ledgerConfig   `yaml:"ledger"`
	// Optimizer configures the trajectory engine's interventions.
	Optimizer optimizerConfig `yaml:"optimizer"`
	Agents    []agentConfig   `yaml:"agents"`
	Routes    []routeConfig   `yaml:"routes"`
	Rules     []ruleConfig    `yaml:"rules"`
}

// runtimeConfig switches the optional subsystems; absent means enabled.
type runtimeConfig struct {
	EnableControlPlane *bool `yaml:"enable_control_plane"`
	EnableLedger       *bool `yaml:"enable_ledger"`
	EnableOptimizer    *bool `yaml:"enable_optimizer"`
}

// ledgerConfig configures the behaviour ledger's embedded store.
type ledgerConfig struct {
	// Durability: "sync" (default; fsynced before the call proceeds, group
	// committed) or "process" (written to the OS before the call proceeds,
	// fsynced within 50 ms).
	Durability string `yaml:"durability"`
}

// optimizerConfig configures what the trajectory engine does when an
// agent's recommendation changes (issue 6).
type optimizerConfig struct {
	// Interventions: "off" (nothing), "recommend" (default: recorded as a
	// planned intervention, visible in the history and the fleet view) or
	// "auto" (advisory → a reminder, throttle → the agent's rate limit
	// halved, escalate → quarantine; each issued by "optimizer").
	Interventions string `yaml:"interventions"`
	// CheckIntervalSeconds is how often every agent's recommendation is
	// recomputed (1..3600, default 5).
	CheckIntervalSeconds *int `yaml:"check_interval_seconds"`
	// Seed seeds the Monte Carlo runs (default 1): same seed, same answer.
	Seed *uint64 `yaml:"seed"`
}

// serverConfig holds the settings of `vigil serve` that may also be given as
// flags; a flag on the command line wins (see fileConfig.serveSettings). Empty
// strings and nil ports mean "not set here".
type serverConfig struct {
	Host       string `yaml:"host"`
	Port       *int   `yaml:"port"`
	ProxyHost  string `yaml:"proxy_host"`
	ProxyPort  *int   `yaml:"proxy_port"`
	DataDir    string `yaml:"data_dir"`
	RedisURL   string `yaml:"redis_url"`
	UI         bool   `yaml:"ui"`
	Metrics    bool   `yaml:"metrics"`
	Playground bool   `yaml:"playground"`
	SimMode    bool   `yaml:"sim_mode"`
}

// apiKeyConfig is one admin API key: X-Api-Key value, principal and role
// (viewer, operator or admin).
type apiKeyConfig struct {
	Key       string `yaml:"key"`
	Principal string `yaml:"principal"`
	Role      string `yaml:"role"`
}

// proxyConfig configures the forward proxy.
type proxyConfig struct {
	// DefaultAgent, when set, receives the calls without credentials
	// (sidecar mode).
	DefaultAgent string `yaml:"default_agent"`
	// HoldTimeoutSeconds is how long an escalated call is held waiting for
	// an approval (1..3600, default 30).
	HoldTimeoutSeconds *int `yaml:"hold_timeout_seconds"`
	// CADir holds the interception CA (vigil ca init); empty: CONNECT is
	// tunnelled without inspection.
	CADir string `yaml:"ca_dir"`
	// UpstreamCAFile is a PEM file of extra CAs trusted for upstream TLS.
	UpstreamCAFile string `yaml:"upstream_ca_file"`
}

// agentConfig is one agent: its proxy credentials and its contract.
type agentConfig struct {
	ID               string                      `yaml:"id"`
	Token            string                      `yaml:"token"`
	Archetype        string                      `yaml:"archetype"`
	Team             string                      `yaml:"team"`
	Scope            []string                    `yaml:"scope"`
	Boundaries       []string                    `yaml:"boundaries"`
	HumanOverride    []string                    `yaml:"human_override"`
	SensitiveTargets []string                    `yaml:"sensitive_targets"`
	Authority        []string                    `yaml:"authority"`
	TimeWindows      map[string]timeWindowConfig `yaml:"time_windows"`
	Limits           limitsConfig                `yaml:"limits"`
	Anchors          map[string]string           `yaml:"anchors"`
}

// timeWindowConfig is governor.TimeWindow in the file.
type timeWindowConfig struct {
	StartHour          int     `yaml:"start_hour"`
	EndHour            int     `yaml:"end_hour"`
	Timezone           string  `yaml:"timezone"`
	MinIntervalSeconds float64 `yaml:"min_interval_seconds"`
}

// limitsConfig is governor.Limits in the file; zero means no limit.
type limitsConfig struct {
	ActionsPerMinute int     `yaml:"actions_per_minute"`
	MaxConcurrent    int     `yaml:"max_concurrent"`
	MaxCostPerAction float64 `yaml:"max_cost_per_action"`
}

// routeConfig maps matching HTTP requests to an action (section 4).
type routeConfig struct {
	Match         routeMatchConfig  `yaml:"match"`
	Action        string            `yaml:"action"`
	Target        string            `yaml:"target"`
	Reversibility string            `yaml:"reversibility"`
	Modify        routeModifyConfig `yaml:"modify"`
}

// routeMatchConfig selects requests: host (required, a glob), method (upper
// case after parsing; empty: any) and path (a glob; empty: any).
type routeMatchConfig struct {
	Host   string `yaml:"host"`
	Method string `yaml:"method"`
	Path   string `yaml:"path"`
}

// routeModifyConfig is what a MODIFY verdict changes in the request.
type routeModifyConfig struct {
	SetQuery   map[string]string `yaml:"set_query"`
	SetHeaders map[string]string `yaml:"set_headers"`
}

// ruleConfig is a constitutional rule (governor.Rule).
type ruleConfig struct {
	Name    string `yaml:"name"`
	Expr    string `yaml:"expr"`
	Message string `yaml:"message"`
}

// defaultConfig is the configuration used without --config: every subsystem
// on, no API keys, no agents, no routes, no rules.
func defaultConfig() *fileConfig {
	c := &fileConfig{}
	c.applyDefaults()
	return c
}

// applyDefaults fills in absent settings and normalizes spellings. It is
// idempotent.
func (c *fileConfig) applyDefaults() {
	if c.Version == nil {
		c.Version = new(configVersion)
	}
	for _, b := range []**bool{&c.Runtime.EnableControlPlane, &c.Runtime.EnableLedger, &c.Runtime.EnableOptimizer} {
		if *b == nil {
			*b = new(true)
		}
	}
	if c.Proxy.HoldTimeoutSeconds == nil {
		c.Proxy.HoldTimeoutSeconds = new(defaultHoldTimeoutSeconds)
	}
	for i := range c.Routes {
		c.Routes[i].Match.Method = strings.ToUpper(c.Routes[i].Match.Method)
	}
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// controlPlaneEnabled reports runtime.enable_control_plane (default true).
func (c *fileConfig) controlPlaneEnabled() bool { return boolOr(c.Runtime.EnableControlPlane, true) }

// ledgerEnabled reports runtime.enable_ledger (default true).
func (c *fileConfig) ledgerEnabled() bool { return boolOr(c.Runtime.EnableLedger, true) }

// optimizerEnabled reports runtime.enable_optimizer (default true).
func (c *fileConfig) optimizerEnabled() bool { return boolOr(c.Runtime.EnableOptimizer, true) }

// trajectoryConfig is the trajectory engine's configuration: GOVERNOR.md's
// constants with optimizer.seed.
func (c *fileConfig) trajectoryConfig() trajectory.Config {
	tc := trajectory.DefaultConfig()
	if c.Optimizer.Seed != nil {
		tc.Seed = *c.Optimizer.Seed
	}
	return tc
}

// checkInterval is optimizer.check_interval_seconds as a duration (default
// 5 s).
func (c *fileConfig) checkInterval() time.Duration {
	if n := c.Optimizer.CheckIntervalSeconds; n != nil {
		return time.Duration(*n) * time.Second
	}
	return 5 * time.Second
}

// holdTimeout is proxy.hold_timeout_seconds as a duration (default 30 s).
func (c *fileConfig) holdTimeout() time.Duration {
	s := defaultHoldTimeoutSeconds
	if c.Proxy.HoldTimeoutSeconds != nil {
		s = *c.Proxy.HoldTimeoutSeconds
	}
	return time.Duration(s) * time.Second
}

// contracts returns the agents' contracts in file order. The result shares
// nothing with c.
func (c *fileConfig) contracts() []governor.Contract {
	out := make([]governor.Contract, 0, len(c.Agents))
	for _, a := range c.Agents {
		out = append(out, a.contract())
	}
	return out
}

func (a *agentConfig) contract() governor.Contract {
	ct := governor.Contract{
		AgentID:          a.ID,
		Archetype:        a.Archetype,
		Team:             a.Team,
		Scope:            slices.Clone(a.Scope),
		Boundaries:       slices.Clone(a.Boundaries),
		HumanOverride:    slices.Clone(a.HumanOverride),
		SensitiveTargets: slices.Clone(a.SensitiveTargets),
		Authority:        slices.Clone(a.Authority),
		Limits: governor.Limits{
			ActionsPerMinute: a.Limits.ActionsPerMinute,
			MaxConcurrent:    a.Limits.MaxConcurrent,
			MaxCostPerAction: a.Limits.MaxCostPerAction,
		},
		Anchors: maps.Clone(a.Anchors),
	}
	if a.TimeWindows != nil {
		ct.TimeWindows = make(map[string]governor.TimeWindow, len(a.TimeWindows))
		for typ, w := range a.TimeWindows {
			ct.TimeWindows[typ] = governor.TimeWindow{
				StartHour:          w.StartHour,
				EndHour:            w.EndHour,
				Timezone:           w.Timezone,
				MinIntervalSeconds: w.MinIntervalSeconds,
			}
		}
	}
	return ct
}

// rules returns the constitutional rules in file order.
func (c *fileConfig) rules() []governor.Rule {
	out := make([]governor.Rule, 0, len(c.Rules))
	for _, r := range c.Rules {
		out = append(out, governor.Rule{Name: r.Name, Expr: r.Expr, Message: r.Message})
	}
	return out
}

// agentTokens maps agent id to proxy token. An agent without a token (only
// proxy.default_agent may have none) is left out: it cannot authenticate
// with Proxy-Authorization, its calls arrive without credentials.
func (c *fileConfig) agentTokens() map[string]string {
	out := make(map[string]string, len(c.Agents))
	for _, a := range c.Agents {
		if a.Token != "" {
			out[a.ID] = a.Token
		}
	}
	return out
}
