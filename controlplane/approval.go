package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/vigilhq/vigil/governor"
)

// Approval statuses (API.md section 9). A pending approval becomes exactly
// one of the other three, once.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// approvalStatuses lists every status, in the order of API.md.
var approvalStatuses = []string{ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired}

// ValidApprovalStatus reports whether s is an approval status's wire name
// (exactly, lower case).
func ValidApprovalStatus(s string) bool { return slices.Contains(approvalStatuses, s) }

// Context codes of the provenance events of approval decisions (actor: the
// operator, or "system" for an expiry; target: the approval id).
const (
	CodeApprovalApproved = "CONTROL.APPROVAL_APPROVED"
	CodeApprovalDenied   = "CONTROL.APPROVAL_DENIED"
	CodeApprovalExpired  = "CONTROL.APPROVAL_EXPIRED"
)

// GrantWindow is how long an approved action may be retried: API.md section
// 4 gives an approval "one retry of the identical call for 10 minutes".
const GrantWindow = 10 * time.Minute

// LedgerRef points at the ledger entry that recorded the escalated
// decision an approval was requested for.
type LedgerRef struct {
	AgentID  string `json:"agent_id"`
	Sequence int64  `json:"sequence"`
}

// Approval is one entry of the override queue: an escalated action held for
// a human, and what became of it.
//
// ExpiresAt depends on the status: for a pending approval, when it expires
// undecided (CreatedAt + ApprovalConfig.HoldWindow); for an approved one,
// until when the identical action may be retried once (DecidedAt +
// GrantWindow); for an expired one, when it came due; zero for a denied one.
// An expired approval has DecidedAt (when the expiry was recorded) and
// DecidedBy "system".
type Approval struct {
	ID      string `json:"id"`
	AgentID string `json:"agent_id"`
	// Action is the held action: its type, target and parameters only.
	Action governor.Action `json:"action"`
	// Digest is governor.ActionDigest of AgentID and Action, which an
	// approval is bound to.
	Digest string `json:"digest"`
	// Reason is why the action was held: the decision's reasoning.
	Reason         string     `json:"reason"`
	Status         string     `json:"status"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      time.Time  `json:"expires_at,omitzero"`
	DecidedAt      time.Time  `json:"decided_at,omitzero"`
	DecidedBy      string     `json:"decided_by,omitempty"`
	DecisionReason string     `json:"decision_reason,omitempty"`
	Ledger         *LedgerRef `json:"ledger,omitempty"`
}

// Pending reports whether a is waiting for a decision.
func (a *Approval) Pending() bool { return a.Status == ApprovalPending }

// Clone returns a deep copy of a (parameter values are shared).
func (a Approval) Clone() Approval {
	a.Action.Parameters = maps.Clone(a.Action.Parameters)
	if a.Ledger != nil {
		l := *a.Ledger
		a.Ledger = &l
	}
	return a
}

// ApprovalStore keeps approvals: FileStore, RedisStore, MemoryStore, or any
// implementation that passes controlplanetest.RunApprovals. Methods are safe
// for concurrent use, also from several processes sharing the store; values
// read back are the JSON decoding of what was written.
type ApprovalStore interface {
	// CreateApproval stores a new approval; ErrConflict when its id is
	// taken.
	CreateApproval(ctx context.Context, a Approval) error
	// GetApproval returns one approval, or ErrNotFound.
	GetApproval(ctx context.Context, id string) (Approval, error)
	// DecideApproval replaces the stored approval a.ID with a, a decided
	// approval, if and only if the stored one is still pending (an atomic
	// compare-and-set: of concurrent deciders, exactly one wins). It
	// returns ErrNotFound for an unknown id and ErrConflict when the stored
	// approval is no longer pending.
	DecideApproval(ctx context.Context, a Approval) error
	// ListApprovals returns the approvals with the status (every status for
	// ""), newest (CreatedAt, then id) first, at most limit (no limit when
	// limit <= 0).
	ListApprovals(ctx context.Context, status string, limit int) ([]Approval, error)
}

// ApprovalWatcher is implemented by an ApprovalStore that several processes
// share (the Redis store): it tells each of them of the decisions any of
// them records.
type ApprovalWatcher interface {
	// WatchApprovals calls decided with the id of each approval decided
	// (or expired) by any process, and with "" whenever it (re)subscribes,
	// since decisions made while it was disconnected are not signalled.
	// decided does not block. It returns nil when ctx ends, ErrClosed when
	// the store is closed, or an error when it cannot watch any more.
	WatchApprovals(ctx context.Context, decided func(id string)) error
}

// Grantor is what approvals need of the governor: *governor.Engine lets one
// action whose digest matches pass human_override once, until expires.
type Grantor interface {
	GrantApproval(agentID, digest string, expires time.Time) error
}

// ApprovalConfig configures Approvals. The zero value takes every default
// (DefaultApprovalConfig).
type ApprovalConfig struct {
	// HoldWindow is how long an approval stays pending before it expires
	// undecided; 0 means 10 minutes. It is longer than the proxy's hold of
	// a call (30 s by default) on purpose: an agent refused after the hold
	// may retry after a later approval.
	HoldWindow time.Duration
	// PollInterval is how often Wait re-reads a pending approval, in case
	// the store's decision signal was lost; 0 means 500 ms.
	PollInterval time.Duration
	// ExpiryInterval is how often Run expires the pending approvals whose
	// hold window elapsed; 0 means one second.
	ExpiryInterval time.Duration
}

// DefaultApprovalConfig returns the documented defaults.
func DefaultApprovalConfig() ApprovalConfig {
	return ApprovalConfig{HoldWindow: 10 * time.Minute, PollInterval: 500 * time.Millisecond, ExpiryInterval: time.Second}
}

// Validate reports every problem of c.
func (c ApprovalConfig) Validate() error {
	var errs []error
	for _, f := range [...]struct {
		name string
		d    time.Duration
	}{{"hold_window", c.HoldWindow}, {"poll_interval", c.PollInterval}, {"expiry_interval", c.ExpiryInterval}} {
		if f.d < 0 {
			errs = append(errs, fmt.Errorf("controlplane approvals config: %s must not be negative, got %v", f.name, f.d))
		}
	}
	return errors.Join(errs...)
}

func (c *ApprovalConfig) normalize() {
	def := DefaultApprovalConfig()
	if c.HoldWindow == 0 {
		c.HoldWindow = def.HoldWindow
	}
	if c.PollInterval == 0 {
		c.PollInterval = def.PollInterval
	}
	if c.ExpiryInterval == 0 {
		c.ExpiryInterval = def.ExpiryInterval
	}
}

// checkDecided returns an error unless a may replace a pending approval:
// it has an id and a decided status.
func checkDecided(a *Approval) error {
	if a.ID == "" {
		return errors.New("controlplane: approval without an id")
	}
	switch a.Status {
	case ApprovalApproved, ApprovalDenied, ApprovalExpired:
		return nil
	}
	return fmt.Errorf("controlplane: approval %s: a decision needs status approved, denied or expired, got %q", a.ID, a.Status)
}
