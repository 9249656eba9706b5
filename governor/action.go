package governor

// Action is one thing an agent attempts: a tool call seen by the proxy or an
// action submitted through the API.
type Action struct {
	// ID identifies the action; Evaluate assigns one when it is empty.
	ID string `json:"id,omitempty"`
	// Type is what the action does: a tool name, or read/create/update/delete.
	Type string `json:"type"`
	// Target is what it acts on: a host and path, a resource URI, a logical name.
	Target string `json:"target"`
	// Parameters are the action's arguments (JSON-like values).
	Parameters map[string]any `json:"parameters"`
	// Source is where the action came from: "proxy", "api" or "simulation".
	Source string `json:"source,omitempty"`
	// Method is the HTTP method when the action came through the proxy.
	Method string `json:"method,omitempty"`
	// Reversibility overrides the level derived from the type (a route rule
	// may say so). The zero value means "derive it".
	Reversibility Reversibility `json:"-"`
}

// Context is what the caller knows about the circumstances of an action. Every
// field is optional; the governor adds the historical context itself.
type Context struct {
	// Instruction is the instruction the agent is acting on; anchor terms are
	// looked up in it (semantic drift).
	Instruction string `json:"instruction,omitempty"`
	// Origin: "user_request", "agent_initiated" or "escalation_received".
	Origin string `json:"origin,omitempty"`
	// Mode: e.g. "incident_response".
	Mode string `json:"mode,omitempty"`
	// Urgency: e.g. "critical".
	Urgency string `json:"urgency,omitempty"`
	// DelegationDepth is how many agents delegated down to this one.
	DelegationDepth int `json:"delegation_depth,omitempty"`
	// ChildAgents is the number of agents this one delegates to.
	ChildAgents int `json:"child_agents,omitempty"`
	// InputCategory classifies the input: "adversarial", "ambiguous", ...
	InputCategory string `json:"input_category,omitempty"`
}

// Request is one call to Engine.Evaluate.
type Request struct {
	AgentID string
	Action  Action
	Context Context
	// DryRun evaluates against the current state without changing it: no
	// trust, fingerprint, history or counter is updated and no approval is
	// used up (the playground).
	DryRun bool
}
