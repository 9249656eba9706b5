package governor

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Contract is the behavioural contract of one agent: what it may do, where,
// when and how much. It is configuration: plain data, validated and compiled by
// Engine.SetContract.
type Contract struct {
	AgentID   string `json:"agent_id"`
	Archetype string `json:"archetype,omitempty"`
	Team      string `json:"team,omitempty"`
	// Scope lists the allowed action types; "*" allows all. Empty: no scope
	// configured (scope_compliance scores 0.5).
	Scope []string `json:"scope,omitempty"`
	// Boundaries lists allowed targets as globs ("api.example.com/*"). Empty:
	// no boundary (isolation_integrity scores 0.6).
	Boundaries []string `json:"boundaries,omitempty"`
	// HumanOverride lists action types that always need a human.
	HumanOverride []string `json:"human_override,omitempty"`
	// SensitiveTargets lists target globs whose stakeholders are at risk.
	SensitiveTargets []string `json:"sensitive_targets,omitempty"`
	// Authority holds CEL expressions over `action` that must all be true.
	Authority []string `json:"authority,omitempty"`
	// TimeWindows restricts action types to hours of the day.
	TimeWindows map[string]TimeWindow `json:"time_windows,omitempty"`
	Limits      Limits                `json:"limits"`
	// Anchors maps instruction terms to their meaning (semantic grounding).
	Anchors map[string]string `json:"anchors,omitempty"`
}

// TimeWindow allows an action type only between StartHour (inclusive) and
// EndHour (exclusive), in Timezone (UTC when empty). A window whose start is
// after its end wraps midnight. MinIntervalSeconds, when positive, also refuses
// an action of the type within that many seconds of the previous one.
type TimeWindow struct {
	StartHour          int     `json:"start_hour"`
	EndHour            int     `json:"end_hour"`
	Timezone           string  `json:"timezone,omitempty"`
	MinIntervalSeconds float64 `json:"min_interval_seconds,omitempty"`
}

// Limits are an agent's resource limits; a zero field means "no limit".
type Limits struct {
	ActionsPerMinute int     `json:"actions_per_minute,omitempty"`
	MaxConcurrent    int     `json:"max_concurrent,omitempty"`
	MaxCostPerAction float64 `json:"max_cost_per_action,omitempty"`
}

// Rule is a constitutional rule: a CEL expression over `action` that must hold
// for every agent, else ethical_alignment vetoes with Message.
type Rule struct {
	Name    string `json:"name"`
	Expr    string `json:"expr"`
	Message string `json:"message"`
}

// compiledContract is a Contract prepared for evaluation. It is immutable once
// built and shared by every evaluation of its agent.
type compiledContract struct {
	spec          Contract
	prior         *Prior // nil: general-purpose, no prior
	scopeAll      bool
	scope         map[string]bool
	humanOverride map[string]bool
	boundaries    []string
	sensitive     []string
	authority     []*Invariant
	windows       map[string]compiledWindow
	anchors       []string // lower-case terms, sorted
}

type compiledWindow struct {
	TimeWindow
	loc *time.Location
}

// Validate reports the first problem of c, naming the offending field.
func (c *Contract) Validate() error {
	_, err := compileContract(*c)
	return err
}

func compileContract(c Contract) (*compiledContract, error) {
	if strings.TrimSpace(c.AgentID) == "" {
		return nil, &FieldError{Field: "id", Msg: "agent id is required"}
	}
	cc := &compiledContract{
		spec:          cloneContract(c),
		scope:         map[string]bool{},
		humanOverride: map[string]bool{},
		windows:       map[string]compiledWindow{},
	}
	if c.Archetype != "" {
		p, err := PriorFor(c.Archetype)
		if err != nil {
			return nil, &FieldError{Field: "archetype", Msg: err.Error()}
		}
		cc.prior = p
	}
	for i, s := range c.Scope {
		if s == "" {
			return nil, &FieldError{Field: fmt.Sprintf("scope[%d]", i), Msg: "empty action type"}
		}
		if s == "*" {
			cc.scopeAll = true
		}
		cc.scope[s] = true
	}
	for _, s := range c.HumanOverride {
		cc.humanOverride[s] = true
	}
	for i, g := range c.Boundaries {
		if _, err := path.Match(g, ""); err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("boundaries[%d]", i), Msg: fmt.Sprintf("bad glob %q: %v", g, err)}
		}
	}
	cc.boundaries = slices.Clone(c.Boundaries)
	for i, g := range c.SensitiveTargets {
		if _, err := path.Match(g, ""); err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("sensitive_targets[%d]", i), Msg: fmt.Sprintf("bad glob %q: %v", g, err)}
		}
	}
	cc.sensitive = slices.Clone(c.SensitiveTargets)
	for i, expr := range c.Authority {
		inv, err := CompileInvariant(fmt.Sprintf("authority[%d]", i), expr, "")
		if err != nil {
			return nil, &FieldError{Field: fmt.Sprintf("authority[%d]", i), Msg: err.Error()}
		}
		cc.authority = append(cc.authority, inv)
	}
	for typ, w := range c.TimeWindows {
		field := "time_windows." + typ
		if w.StartHour < 0 || w.StartHour > 23 {
			return nil, &FieldError{Field: field + ".start_hour", Msg: "must be 0..23"}
		}
		if w.EndHour < 0 || w.EndHour > 24 {
			return nil, &FieldError{Field: field + ".end_hour", Msg: "must be 0..24"}
		}
		if w.MinIntervalSeconds < 0 {
			return nil, &FieldError{Field: field + ".min_interval_seconds", Msg: "must not be negative"}
		}
		loc := time.UTC
		if w.Timezone != "" {
			l, err := time.LoadLocation(w.Timezone)
			if err != nil {
				return nil, &FieldError{Field: field + ".timezone", Msg: fmt.Sprintf("unknown time zone %q", w.Timezone)}
			}
			loc = l
		}
		cc.windows[typ] = compiledWindow{TimeWindow: w, loc: loc}
	}
	if c.Limits.ActionsPerMinute < 0 {
		return nil, &FieldError{Field: "limits.actions_per_minute", Msg: "must not be negative"}
	}
	if c.Limits.MaxConcurrent < 0 {
		return nil, &FieldError{Field: "limits.max_concurrent", Msg: "must not be negative"}
	}
	if c.Limits.MaxCostPerAction < 0 {
		return nil, &FieldError{Field: "limits.max_cost_per_action", Msg: "must not be negative"}
	}
	for term := range c.Anchors {
		t := strings.ToLower(strings.TrimSpace(term))
		if t == "" {
			return nil, &FieldError{Field: "anchors", Msg: "empty anchor term"}
		}
		cc.anchors = append(cc.anchors, t)
	}
	slices.Sort(cc.anchors)
	return cc, nil
}

// allows reports whether the window admits an action at t.
func (w compiledWindow) allows(t time.Time) bool {
	h := t.In(w.loc).Hour()
	if w.StartHour == w.EndHour {
		return true
	}
	if w.StartHour < w.EndHour {
		return h >= w.StartHour && h < w.EndHour
	}
	return h >= w.StartHour || h < w.EndHour
}

// InScope reports whether the contract's scope allows the action type (a
// tool name, for MCP): an empty scope (none configured, which does not veto)
// and "*" allow every type.
func (c *Contract) InScope(actionType string) bool {
	return len(c.Scope) == 0 || slices.Contains(c.Scope, "*") || slices.Contains(c.Scope, actionType)
}

// MatchGlob reports whether target matches the glob: the one glob syntax of
// contracts (boundaries, sensitive targets) and route rules. A "*" pattern matches
// everything; otherwise path.Match applies, with a trailing "/*" also matching
// deeper paths ("api.example.com/*" matches "api.example.com/a/b").
func MatchGlob(pattern, target string) bool {
	if pattern == "*" {
		return true
	}
	if ok, _ := path.Match(pattern, target); ok {
		return true
	}
	if prefix, found := strings.CutSuffix(pattern, "/*"); found {
		if ok, _ := path.Match(prefix, target); ok {
			return true
		}
		if i := strings.Index(target, "/"); i >= 0 {
			// Match the pattern's prefix against the same number of segments.
			n := strings.Count(prefix, "/") + 1
			segs := strings.SplitN(target, "/", n+1)
			if len(segs) > n {
				if ok, _ := path.Match(prefix, strings.Join(segs[:n], "/")); ok {
					return true
				}
			}
		}
	}
	return false
}

func cloneContract(c Contract) Contract {
	c.Scope = slices.Clone(c.Scope)
	c.Boundaries = slices.Clone(c.Boundaries)
	c.HumanOverride = slices.Clone(c.HumanOverride)
	c.SensitiveTargets = slices.Clone(c.SensitiveTargets)
	c.Authority = slices.Clone(c.Authority)
	if c.TimeWindows != nil {
		m := make(map[string]TimeWindow, len(c.TimeWindows))
		for k, v := range c.TimeWindows {
			m[k] = v
		}
		c.TimeWindows = m
	}
	if c.Anchors != nil {
		m := make(map[string]string, len(c.Anchors))
		for k, v := range c.Anchors {
			m[k] = v
		}
		c.Anchors = m
	}
	return c
}
