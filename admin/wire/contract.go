package wire

import (
	"maps"

	"github.com/vigilhq/vigil/governor"
)

// Contract is an agent's behavioural contract as sent to PUT
// /v1/agents/{agent_id} and returned in [Agent]. The agent id comes from the
// path, and agent tokens are never part of it: tokens are configured in the
// configuration file only. A PUT replaces the whole contract: an omitted
// field is empty.
type Contract struct {
	Archetype        string                `json:"archetype"`
	Team             string                `json:"team"`
	Scope            []string              `json:"scope"`
	Boundaries       []string              `json:"boundaries"`
	HumanOverride    []string              `json:"human_override"`
	SensitiveTargets []string              `json:"sensitive_targets"`
	Authority        []string              `json:"authority"`
	TimeWindows      map[string]TimeWindow `json:"time_windows"`
	Limits           Limits                `json:"limits"`
	Anchors          map[string]string     `json:"anchors"`
}

// TimeWindow allows an action type only from StartHour (inclusive) to
// EndHour (exclusive) in Timezone (UTC when empty); MinIntervalSeconds, when
// positive, also spaces actions of the type apart.
type TimeWindow struct {
	StartHour          int     `json:"start_hour"`
	EndHour            int     `json:"end_hour"`
	Timezone           string  `json:"timezone"`
	MinIntervalSeconds float64 `json:"min_interval_seconds"`
}

// Limits are an agent's resource limits; 0 means no limit.
type Limits struct {
	ActionsPerMinute int     `json:"actions_per_minute"`
	MaxConcurrent    int     `json:"max_concurrent"`
	MaxCostPerAction float64 `json:"max_cost_per_action"`
}

// NewContract converts a governor contract for the wire.
func NewContract(c governor.Contract) Contract {
	out := Contract{
		Archetype:        c.Archetype,
		Team:             c.Team,
		Scope:            strs(c.Scope),
		Boundaries:       strs(c.Boundaries),
		HumanOverride:    strs(c.HumanOverride),
		SensitiveTargets: strs(c.SensitiveTargets),
		Authority:        strs(c.Authority),
		TimeWindows:      make(map[string]TimeWindow, len(c.TimeWindows)),
		Limits: Limits{
			ActionsPerMinute: c.Limits.ActionsPerMinute,
			MaxConcurrent:    c.Limits.MaxConcurrent,
			MaxCostPerAction: c.Limits.MaxCostPerAction,
		},
		Anchors: make(map[string]string, len(c.Anchors)),
	}
	for typ, w := range c.TimeWindows {
		out.TimeWindows[typ] = TimeWindow{StartHour: w.StartHour, EndHour: w.EndHour, Timezone: w.Timezone, MinIntervalSeconds: w.MinIntervalSeconds}
	}
	maps.Copy(out.Anchors, c.Anchors)
	return out
}

// ToGovernor converts c into the governor contract of agentID. It does not
// validate; Engine.SetContract does.
func (c Contract) ToGovernor(agentID string) governor.Contract {
	out := governor.Contract{
		AgentID:          agentID,
		Archetype:        c.Archetype,
		Team:             c.Team,
		Scope:            clone(c.Scope),
		Boundaries:       clone(c.Boundaries),
		HumanOverride:    clone(c.HumanOverride),
		SensitiveTargets: clone(c.SensitiveTargets),
		Authority:        clone(c.Authority),
		Limits: governor.Limits{
			ActionsPerMinute: c.Limits.ActionsPerMinute,
			MaxConcurrent:    c.Limits.MaxConcurrent,
			MaxCostPerAction: c.Limits.MaxCostPerAction,
		},
		Anchors: maps.Clone(c.Anchors),
	}
	if c.TimeWindows != nil {
		out.TimeWindows = make(map[string]governor.TimeWindow, len(c.TimeWindows))
		for typ, w := range c.TimeWindows {
			out.TimeWindows[typ] = governor.TimeWindow{StartHour: w.StartHour, EndHour: w.EndHour, Timezone: w.Timezone, MinIntervalSeconds: w.MinIntervalSeconds}
		}
	}
	return out
}

// clone copies s, keeping nil as nil.
func clone(s []string) []string {
	if s == nil {
		return nil
	}
	return strs(s)
}
