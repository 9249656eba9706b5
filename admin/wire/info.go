package wire

// Health is the body of GET /v1/health.
type Health struct {
	// Status is "ok" when serving, "degraded" (with a 503) while a
	// required store is unreachable.
	Status string `json:"status"`
	// Checks, when degraded, is each check's result by name: "ok" or
	// what failed ("circuit open").
	Checks map[string]string `json:"checks,omitempty"`
}

// Info is the body of GET /v1/info: what this instance is and which
// subsystems it runs.
type Info struct {
	Name                string   `json:"name"`
	Version             string   `json:"version"`
	StartedAt           string   `json:"started_at"`
	Store               string   `json:"store"`
	ControlPlaneEnabled bool     `json:"control_plane_enabled"`
	LedgerEnabled       bool     `json:"ledger_enabled"`
	OptimizerEnabled    bool     `json:"optimizer_enabled"`
	ProxyAddress        string   `json:"proxy_address"`
	Features            []string `json:"features"`
}
