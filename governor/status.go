package governor

import "time"

// AgentStatus is a read-only view of one agent's governance state, for the
// API and the dashboard.
type AgentStatus struct {
	AgentID  string
	Contract Contract
	// Prior is the archetype prior's name ("" for none).
	Prior string

	Trust          float64
	TrustDirection string
	TrustVelocity  float64
	Violations     int

	Observations          int
	FingerprintConfidence float64
	Fingerprint           Fingerprint
	Drift                 DriftScores
	DriftConfidence       float64
	Severity              string
	// Thresholds are the effective drift thresholds (after tighten).
	Thresholds Thresholds

	Quarantined bool
	Suspended   bool
	Directives  []string
	InFlight    int
	// UpstreamFailures counts the agent's forwarded calls that the tool did
	// not answer (unreachable, failing, breaker open) since this process
	// started.
	UpstreamFailures int64
	// LastEvaluation is zero when the agent has not acted yet.
	LastEvaluation time.Time
	Alerts         []DriftAlert
}

// Fingerprint is an agent's whole-history behaviour, blended with its prior:
// one distribution per dimension of behaviour, shares summing to 1 (empty when
// nothing is known).
type Fingerprint struct {
	Actions  []Share `json:"action"`
	Targets  []Share `json:"target"`
	Hours    []Share `json:"temporal"`
	Outcomes []Share `json:"outcome"`
	// Rate is the expected actions per hour.
	Rate float64 `json:"rate"`
}

// DriftAlert is raised when a drift recomputation finds moderate or higher
// severity; alerts are deduplicated while an unacknowledged alert of the same
// or higher severity exists.
type DriftAlert struct {
	ID           string    `json:"id"`
	Severity     string    `json:"severity"`
	Overall      float64   `json:"overall"`
	RaisedAt     time.Time `json:"raised_at"`
	Acknowledged bool      `json:"acknowledged"`
}

// DriftPoint is one drift recomputation: Step is the agent's observation
// count at the time.
type DriftPoint struct {
	Step       int         `json:"step"`
	Time       time.Time   `json:"timestamp"`
	Drift      DriftScores `json:"drift"`
	Confidence float64     `json:"confidence"`
}

// TrustEvent is one change of trust larger than the configured minimum.
type TrustEvent struct {
	Time   time.Time `json:"timestamp"`
	Source string    `json:"source"`
	Reason string    `json:"reason"`
	Before float64   `json:"before"`
	After  float64   `json:"after"`
}
