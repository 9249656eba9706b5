package wire

import (
	"maps"

	"github.com/vigilhq/vigil/controlplane"
)

// Approval is one entry of the override queue (API.md section 9): an
// escalated action held for a human, and what became of it. Status is
// pending, approved, denied or expired. ExpiresAt is, while pending, when it
// expires undecided; once approved, until when the identical action may be
// retried once; for an expired one, when it came due; null for a denied
// one. DecidedAt and DecidedBy are null while pending; an expired approval
// is decided by "system". Ledger is the entry that recorded the escalated
// decision, null when none was recorded.
type Approval struct {
	ID             string         `json:"id"`
	AgentID        string         `json:"agent_id"`
	Action         ApprovalAction `json:"action"`
	Digest         string         `json:"digest"`
	Reason         string         `json:"reason"`
	Status         string         `json:"status"`
	CreatedAt      string         `json:"created_at"`
	ExpiresAt      *string        `json:"expires_at"`
	DecidedAt      *string        `json:"decided_at"`
	DecidedBy      *string        `json:"decided_by"`
	DecisionReason string         `json:"decision_reason"`
	Ledger         *LedgerRef     `json:"ledger"`
}

// ApprovalAction is the held action: its type, target and parameters (an
// object, {} for none), which the approval is bound to.
type ApprovalAction struct {
	Type       string         `json:"type"`
	Target     string         `json:"target"`
	Parameters map[string]any `json:"parameters"`
}

// ApprovalList is the body of GET /v1/approvals: newest first.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// ApprovalDecision is the optional body of POST
// /v1/approvals/{approval_id}/approve and /deny. Operator, when given, must
// be the key's principal unless the key is an admin's.
type ApprovalDecision struct {
	Reason   string `json:"reason,omitempty"`
	Operator string `json:"operator,omitempty"`
}

// NewApproval converts a control plane approval for the wire.
func NewApproval(a controlplane.Approval) Approval {
	params := maps.Clone(a.Action.Parameters)
	if params == nil {
		params = map[string]any{}
	}
	out := Approval{
		ID:             a.ID,
		AgentID:        a.AgentID,
		Action:         ApprovalAction{Type: a.Action.Type, Target: a.Action.Target, Parameters: params},
		Digest:         a.Digest,
		Reason:         a.Reason,
		Status:         a.Status,
		CreatedAt:      Time(a.CreatedAt),
		ExpiresAt:      OptionalTime(a.ExpiresAt),
		DecidedAt:      OptionalTime(a.DecidedAt),
		DecisionReason: a.DecisionReason,
	}
	if a.DecidedBy != "" {
		by := a.DecidedBy
		out.DecidedBy = &by
	}
	if a.Ledger != nil {
		out.Ledger = &LedgerRef{AgentID: a.Ledger.AgentID, Sequence: a.Ledger.Sequence}
	}
	return out
}

// NewApprovalList converts approvals (never null).
func NewApprovalList(as []controlplane.Approval) ApprovalList {
	out := ApprovalList{Approvals: make([]Approval, len(as))}
	for i, a := range as {
		out.Approvals[i] = NewApproval(a)
	}
	return out
}
