package wire

import "github.com/vigilhq/vigil/governor"

// AgentList is the body of GET /v1/agents: one summary per agent, sorted by
// agent id.
type AgentList struct {
	Agents []AgentSummary `json:"agents"`
}

// AgentSummary is one line of the agent list.
type AgentSummary struct {
	AgentID        string  `json:"agent_id"`
	Archetype      string  `json:"archetype"`
	Team           string  `json:"team"`
	TrustScore     float64 `json:"trust_score"`
	TrustDirection string  `json:"trust_direction"`
	DriftOverall   float64 `json:"drift_overall"`
	// Severity is none, low, moderate, high or critical.
	Severity     string `json:"severity"`
	Quarantined  bool   `json:"quarantined"`
	Suspended    bool   `json:"suspended"`
	Observations int    `json:"observations"`
}

// Agent is the full view of one agent: GET and PUT /v1/agents/{agent_id}.
type Agent struct {
	AgentID string `json:"agent_id"`
	// Archetype is the contract's archetype ("" for none).
	Archetype string `json:"archetype"`
	// Prior is the name of the archetype prior in use ("" for none).
	Prior                 string      `json:"prior"`
	Team                  string      `json:"team"`
	Contract              Contract    `json:"contract"`
	Trust                 Trust       `json:"trust"`
	Drift                 Drift       `json:"drift"`
	Fingerprint           Fingerprint `json:"fingerprint"`
	FingerprintConfidence float64     `json:"fingerprint_confidence"`
	Observations          int         `json:"observations"`
	// Thresholds are the effective drift thresholds (after tighten).
	Thresholds  Thresholds `json:"thresholds"`
	Quarantined bool       `json:"quarantined"`
	Suspended   bool       `json:"suspended"`
	// Directives are the ids of the directives bound to the agent.
	Directives []string `json:"directives"`
	// InFlight is the number of the agent's forwarded calls not yet finished.
	InFlight int `json:"in_flight"`
	// UpstreamFailures counts the agent's forwarded calls the tool did not
	// answer (unreachable, failing, circuit open) since the process started.
	UpstreamFailures int64 `json:"upstream_failures"`
	// LastEvaluation is null when the agent has not acted yet.
	LastEvaluation *string `json:"last_evaluation"`
	Alerts         []Alert `json:"alerts"`
}

// Trust is an agent's trust: score in [0, 1], direction (the trend) and
// velocity, and the number of violations so far.
type Trust struct {
	Score      float64 `json:"score"`
	Direction  string  `json:"direction"`
	Velocity   float64 `json:"velocity"`
	Violations int     `json:"violations"`
}

// Drift is an agent's drift per distribution and overall, each in [0, 1],
// with the confidence of the last recomputation and the severity.
type Drift struct {
	Action     float64 `json:"action"`
	Target     float64 `json:"target"`
	Temporal   float64 `json:"temporal"`
	Outcome    float64 `json:"outcome"`
	Semantic   float64 `json:"semantic"`
	Overall    float64 `json:"overall"`
	Confidence float64 `json:"confidence"`
	Severity   string  `json:"severity"`
}

// Fingerprint is an agent's whole-history behaviour: one distribution per
// dimension of behaviour, and the expected actions per hour.
type Fingerprint struct {
	Action   []Share `json:"action"`
	Target   []Share `json:"target"`
	Temporal []Share `json:"temporal"`
	Outcome  []Share `json:"outcome"`
	Rate     float64 `json:"rate"`
}

// Share is one key of a distribution and its share.
type Share struct {
	Key   string  `json:"key"`
	Share float64 `json:"share"`
}

// Thresholds are drift severity thresholds.
type Thresholds struct {
	Low      float64 `json:"low"`
	Moderate float64 `json:"moderate"`
	High     float64 `json:"high"`
	Critical float64 `json:"critical"`
}

// Alert is a drift alert raised for an agent.
type Alert struct {
	ID           string  `json:"id"`
	Severity     string  `json:"severity"`
	Overall      float64 `json:"overall"`
	RaisedAt     string  `json:"raised_at"`
	Acknowledged bool    `json:"acknowledged"`
}

// NewAgentSummary converts an agent's status into a line of the agent list.
func NewAgentSummary(s governor.AgentStatus) AgentSummary {
	return AgentSummary{
		AgentID:        s.AgentID,
		Archetype:      s.Contract.Archetype,
		Team:           s.Contract.Team,
		TrustScore:     s.Trust,
		TrustDirection: s.TrustDirection,
		DriftOverall:   s.Drift.Overall,
		Severity:       s.Severity,
		Quarantined:    s.Quarantined,
		Suspended:      s.Suspended,
		Observations:   s.Observations,
	}
}

// NewAgent converts an agent's status into its full view.
func NewAgent(s governor.AgentStatus) Agent {
	a := Agent{
		AgentID:   s.AgentID,
		Archetype: s.Contract.Archetype,
		Prior:     s.Prior,
		Team:      s.Contract.Team,
		Contract:  NewContract(s.Contract),
		Trust: Trust{
			Score:      s.Trust,
			Direction:  s.TrustDirection,
			Velocity:   s.TrustVelocity,
			Violations: s.Violations,
		},
		Drift: Drift{
			Action:     s.Drift.Action,
			Target:     s.Drift.Target,
			Temporal:   s.Drift.Temporal,
			Outcome:    s.Drift.Outcome,
			Semantic:   s.Drift.Semantic,
			Overall:    s.Drift.Overall,
			Confidence: s.DriftConfidence,
			Severity:   s.Severity,
		},
		Fingerprint: Fingerprint{
			Action:   newShares(s.Fingerprint.Actions),
			Target:   newShares(s.Fingerprint.Targets),
			Temporal: newShares(s.Fingerprint.Hours),
			Outcome:  newShares(s.Fingerprint.Outcomes),
			Rate:     s.Fingerprint.Rate,
		},
		FingerprintConfidence: s.FingerprintConfidence,
		Observations:          s.Observations,
		Thresholds:            newThresholds(s.Thresholds),
		Quarantined:           s.Quarantined,
		Suspended:             s.Suspended,
		Directives:            strs(s.Directives),
		InFlight:              s.InFlight,
		UpstreamFailures:      s.UpstreamFailures,
		LastEvaluation:        OptionalTime(s.LastEvaluation),
		Alerts:                make([]Alert, len(s.Alerts)),
	}
	for i, al := range s.Alerts {
		a.Alerts[i] = Alert{
			ID:           al.ID,
			Severity:     al.Severity,
			Overall:      al.Overall,
			RaisedAt:     Time(al.RaisedAt),
			Acknowledged: al.Acknowledged,
		}
	}
	return a
}

func newShares(in []governor.Share) []Share {
	out := make([]Share, len(in))
	for i, s := range in {
		out[i] = Share{Key: s.Key, Share: s.Share}
	}
	return out
}

func newThresholds(t governor.Thresholds) Thresholds {
	return Thresholds{Low: t.Low, Moderate: t.Moderate, High: t.High, Critical: t.Critical}
}
