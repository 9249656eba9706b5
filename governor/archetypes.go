package governor

import (
	"fmt"
	"slices"
	"strings"
)

// Prior is an archetype's expected behaviour, which seeds a new agent's
// fingerprint with PriorWeight observations (ARCHETYPES.md).
type Prior struct {
	Name string `json:"name"`
	// Actions: share per action type.
	Actions []Share `json:"action_shares"`
	// Targets: share per target category; a target belongs to the first
	// category whose word it contains (case-insensitive).
	Targets []Share `json:"target_categories"`
	// PeakHours get twice the weight of the other active hours.
	PeakHours []int `json:"peak_hours"`
	// ActiveHours are the hours (UTC) in which the agent is expected to act.
	ActiveHours []int `json:"active_hours"`
	// RateMin and RateMax bound the expected actions per hour.
	RateMin float64 `json:"rate_min"`
	RateMax float64 `json:"rate_max"`
	// Outcomes: share per verdict name.
	Outcomes []Share `json:"outcome_shares"`
	// DriftWeights weigh the distributions in overall drift (semantic 1.0).
	DriftWeights DriftWeights `json:"drift_weights"`
}

// Share is one key of a distribution and its share.
type Share struct {
	Key   string  `json:"key"`
	Share float64 `json:"share"`
}

// DriftWeights weigh per-distribution drift into overall drift.
type DriftWeights struct {
	Action   float64 `json:"action"`
	Target   float64 `json:"target"`
	Temporal float64 `json:"temporal"`
	Outcome  float64 `json:"outcome"`
	Semantic float64 `json:"semantic"`
}

// Archetype names an agent archetype and the prior it uses (nil: none).
type Archetype struct {
	Name  string
	Prior *Prior
}

var defaultDriftWeights = DriftWeights{Action: 1, Target: 1, Temporal: 1, Outcome: 1, Semantic: 1}

func hours(from, to int) []int {
	var h []int
	for i := from; i <= to; i++ {
		h = append(h, i)
	}
	return h
}

func shares(kv ...any) []Share {
	s := make([]Share, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		s = append(s, Share{Key: kv[i].(string), Share: kv[i+1].(float64)})
	}
	return s
}

func outcomes(allow, modify, escalate, deny float64) []Share {
	return shares("ALLOW", allow, "MODIFY", modify, "ESCALATE", escalate, "DENY", deny)
}

// priors returns the ten priors of ARCHETYPES.md. A fresh copy on every call:
// nothing here is shared mutable state.
func priors() []*Prior {
	business := hours(8, 17)
	all := hours(0, 23)
	return []*Prior{
		{Name: "customer-experience", Actions: shares("read", .55, "write", .20, "send", .12, "query", .08, "escalate", .05),
			Targets:   shares("customer", .50, "order", .25, "product", .15, "communication", .10),
			PeakHours: hours(10, 14), ActiveHours: business, RateMin: 150, RateMax: 400,
			Outcomes: outcomes(.92, .04, .03, .01), DriftWeights: DriftWeights{1.2, 1.0, 0.8, 1.5, 1}},
		{Name: "operations-coordinator", Actions: shares("query", .30, "write", .25, "send", .20, "read", .15, "create", .10),
			Targets:   shares("workflow", .30, "agent", .25, "status", .20, "report", .15, "config", .10),
			PeakHours: []int{9, 10, 11, 14, 15, 16}, ActiveHours: business, RateMin: 100, RateMax: 300,
			Outcomes: outcomes(.95, .03, .01, .01), DriftWeights: DriftWeights{1.0, 1.3, 1.0, 1.0, 1}},
		{Name: "financial-analyst", Actions: shares("read", .45, "query", .30, "write", .15, "escalate", .07, "send", .03),
			Targets:   shares("financial", .40, "market", .25, "report", .20, "compliance", .10, "client", .05),
			PeakHours: hours(8, 10), ActiveHours: business, RateMin: 50, RateMax: 200,
			Outcomes: outcomes(.88, .05, .05, .02), DriftWeights: DriftWeights{1.5, 1.5, 1.2, 1.3, 1}},
		{Name: "data-processor", Actions: shares("read", .40, "write", .35, "query", .15, "create", .08, "delete", .02),
			Targets:   shares("data", .50, "storage", .25, "pipeline", .15, "cache", .10),
			PeakHours: nil, ActiveHours: all, RateMin: 500, RateMax: 5000,
			Outcomes: outcomes(.97, .01, .01, .01), DriftWeights: DriftWeights{1.0, 1.2, 0.5, 1.5, 1}},
		{Name: "content-creator", Actions: shares("create", .35, "write", .25, "read", .20, "query", .15, "send", .05),
			Targets:   shares("content", .40, "media", .20, "template", .15, "brand", .15, "publish", .10),
			PeakHours: hours(10, 16), ActiveHours: business, RateMin: 30, RateMax: 150,
			Outcomes: outcomes(.90, .06, .02, .02), DriftWeights: DriftWeights{0.8, 1.0, 0.6, 1.0, 1}},
		{Name: "security-monitor", Actions: shares("read", .50, "query", .30, "escalate", .10, "write", .08, "send", .02),
			Targets:   shares("logs", .35, "network", .25, "auth", .20, "incident", .15, "config", .05),
			PeakHours: nil, ActiveHours: all, RateMin: 200, RateMax: 1000,
			Outcomes: outcomes(.96, .01, .02, .01), DriftWeights: DriftWeights{1.3, 1.5, 0.8, 1.2, 1}},
		{Name: "research-analyst", Actions: shares("read", .40, "query", .35, "write", .12, "create", .08, "send", .05),
			Targets:   shares("research", .30, "external", .25, "data", .20, "document", .15, "reference", .10),
			PeakHours: hours(10, 16), ActiveHours: append(hours(8, 17), 18, 19), RateMin: 50, RateMax: 200,
			Outcomes: outcomes(.93, .03, .02, .02), DriftWeights: DriftWeights{0.8, 0.8, 0.6, 1.0, 1}},
		{Name: "sales-agent", Actions: shares("read", .30, "send", .25, "write", .20, "query", .15, "create", .10),
			Targets:   shares("prospect", .30, "client", .25, "product", .20, "communication", .15, "crm", .10),
			PeakHours: []int{10, 11, 12, 14, 15, 16}, ActiveHours: business, RateMin: 100, RateMax: 300,
			Outcomes: outcomes(.93, .03, .02, .02), DriftWeights: DriftWeights{1.0, 1.2, 0.8, 1.0, 1}},
		{Name: "executive-assistant", Actions: shares("read", .30, "write", .25, "send", .20, "create", .15, "query", .10),
			Targets:   shares("calendar", .30, "communication", .25, "document", .20, "travel", .15, "contact", .10),
			PeakHours: hours(8, 10), ActiveHours: business, RateMin: 80, RateMax: 250,
			Outcomes: outcomes(.95, .02, .02, .01), DriftWeights: DriftWeights{0.8, 1.0, 1.0, 1.0, 1}},
		{Name: "healthcare-agent", Actions: shares("read", .40, "query", .25, "write", .15, "escalate", .12, "send", .08),
			Targets:   shares("patient", .35, "clinical", .25, "schedule", .20, "pharmacy", .10, "insurance", .10),
			PeakHours: hours(8, 12), ActiveHours: all, RateMin: 100, RateMax: 400,
			Outcomes: outcomes(.87, .05, .06, .02), DriftWeights: DriftWeights{1.3, 1.5, 0.8, 1.5, 1}},
	}
}

// archetypeMap maps each archetype to its prior's name ("" for none).
var archetypeMap = map[string]string{
	"customer-experience":    "customer-experience",
	"data-processing":        "data-processor",
	"security-monitoring":    "security-monitor",
	"content-generation":     "content-creator",
	"clinical-support":       "healthcare-agent",
	"research-assistant":     "research-analyst",
	"sales-assistant":        "sales-agent",
	"analytics":              "research-analyst",
	"financial-transactions": "financial-analyst",
	"underwriting":           "financial-analyst",
	"system-administration":  "operations-coordinator",
	"workflow-orchestration": "operations-coordinator",
	"supply-chain":           "operations-coordinator",
	"content-moderation":     "security-monitor",
	"compliance-audit":       "security-monitor",
	"executive-support":      "executive-assistant",
	"general-purpose":        "",
}

// Archetypes lists the 16 archetypes and the 10 prior names (each also an
// accepted archetype), sorted by name.
func Archetypes() []Archetype {
	byName := map[string]*Prior{}
	for _, p := range priors() {
		byName[p.Name] = p
	}
	seen := map[string]bool{}
	var out []Archetype
	for name, prior := range archetypeMap {
		out = append(out, Archetype{Name: name, Prior: byName[prior]})
		seen[name] = true
	}
	for name, p := range byName {
		if !seen[name] {
			out = append(out, Archetype{Name: name, Prior: p})
		}
	}
	slices.SortFunc(out, func(a, b Archetype) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// PriorFor returns the prior of an archetype (nil for general-purpose), or an
// error naming the closest valid archetype.
func PriorFor(archetype string) (*Prior, error) {
	for _, a := range Archetypes() {
		if a.Name == archetype {
			return a.Prior, nil
		}
	}
	best, bestD := "", -1
	for _, a := range Archetypes() {
		if d := levenshtein(strings.ToLower(archetype), a.Name); bestD < 0 || d < bestD {
			best, bestD = a.Name, d
		}
	}
	return nil, fmt.Errorf("unknown archetype %q (did you mean %q?)", archetype, best)
}

// hourShares spreads a prior over the hours of the day: active hours weigh 1,
// peak hours 2.
func (p *Prior) hourShares() []Share {
	var w [24]float64
	for _, h := range p.ActiveHours {
		w[h] = 1
	}
	for _, h := range p.PeakHours {
		w[h] = 2
	}
	var sum float64
	for _, x := range w {
		sum += x
	}
	var out []Share
	for h, x := range w {
		if x > 0 {
			out = append(out, Share{Key: hourKey(h), Share: x / sum})
		}
	}
	return out
}

// rate is the prior's expected actions per hour: the middle of its range.
func (p *Prior) rate() float64 { return (p.RateMin + p.RateMax) / 2 }

// targetCategory returns the first category of the prior whose word the
// target contains, or "".
func (p *Prior) targetCategory(target string) string {
	lt := strings.ToLower(target)
	for _, c := range p.Targets {
		if strings.Contains(lt, c.Key) {
			return c.Key
		}
	}
	return ""
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
