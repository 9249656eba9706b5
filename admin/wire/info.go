package wire

// Health is the body of GET /v1/health.
type Health struct {
	// Status is "ok" when serving.
	Status string `json:"status"`
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
