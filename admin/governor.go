package admin

import "github.com/vigilhq/vigil/governor"

// Governor is what the admin API needs of the governor; *governor.Engine
// implements it.
type Governor interface {
	// Evaluate decides one action (DryRun for the playground).
	Evaluate(governor.Request) (*governor.Decision, error)
	// Agents returns the ids of the registered agents.
	Agents() []string
	// Status returns a read-only view of one agent's state.
	Status(agentID string) (governor.AgentStatus, error)
	// SetContract validates and installs an agent's contract.
	SetContract(governor.Contract) error
	// DriftHistory returns the agent's drift recomputations, oldest first
	// (the /v1/trajectory routes).
	DriftHistory(agentID string) ([]governor.DriftPoint, error)
}
