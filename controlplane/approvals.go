package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/governor"
)

// Approvals is the override queue (API.md section 9): it requests approvals
// for escalated actions, records the operators' decisions, grants approved
// actions to the governor, expires what nobody decided, and lets a caller
// holding a call wait for the decision. Its methods are safe for concurrent
// use; several Approvals (one per sidecar) may share one store.
type Approvals struct {
	cfg    ApprovalConfig
	store  ApprovalStore
	events Store
	grants Grantor
	clock  func() time.Time
	log    *slog.Logger

	mu sync.Mutex // guards waiters and granted
	// waiters are the channels of the Wait calls in progress, per approval
	// id; a wake-up is a non-blocking send (each channel has room for one).
	waiters map[string]map[chan struct{}]struct{}
	// granted holds the approvals granted to this process's governor, with
	// the grant's expiry, so that each is granted at most once here.
	granted map[string]time.Time
}

// ApprovalOption configures Approvals beyond ApprovalConfig (rare knobs).
type ApprovalOption func(*Approvals)

// WithApprovalClock replaces time.Now (tests, simulation).
func WithApprovalClock(now func() time.Time) ApprovalOption {
	return func(s *Approvals) { s.clock = now }
}

// WithApprovalLogger sets where Approvals reports the errors of its
// background work (Run, Wait's retries, grants); slog.Default() when not
// given.
func WithApprovalLogger(l *slog.Logger) ApprovalOption {
	return func(s *Approvals) { s.log = l }
}

// NewApprovals returns the override queue keeping approvals in store,
// recording provenance events in events and granting approved actions to
// grants (see DefaultApprovalConfig). The stores of this package are both
// stores at once.
func NewApprovals(cfg ApprovalConfig, store ApprovalStore, events Store, grants Grantor, opts ...ApprovalOption) (*Approvals, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil || events == nil || grants == nil {
		return nil, errors.New("controlplane: NewApprovals needs an approval store, an event store and a grantor")
	}
	cfg.normalize()
	s := &Approvals{cfg: cfg, store: store, events: events, grants: grants, clock: time.Now,
		waiters: map[string]map[chan struct{}]struct{}{}, granted: map[string]time.Time{}}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

func (s *Approvals) now() time.Time { return s.clock().UTC() }

// RequestArgs describe the escalated action an approval is requested for.
type RequestArgs struct {
	AgentID string
	// Action is the held action; only its type, target and parameters are
	// kept (they are what the approval's digest binds).
	Action governor.Action
	// Reason is why it was held: the decision's reasoning.
	Reason string
	// Ledger is the entry that recorded the decision; nil for none.
	Ledger *LedgerRef
}

// Request creates a pending approval for an escalated action. It expires
// undecided after ApprovalConfig.HoldWindow.
func (s *Approvals) Request(ctx context.Context, args RequestArgs) (Approval, error) {
	if strings.TrimSpace(args.AgentID) == "" {
		return Approval{}, &FieldError{Field: "agent_id", Msg: "an approval needs an agent"}
	}
	act := governor.Action{Type: args.Action.Type, Target: args.Action.Target, Parameters: maps.Clone(args.Action.Parameters)}
	now := s.now()
	a := Approval{
		ID: newID("apr_"), AgentID: args.AgentID, Action: act, Digest: governor.ActionDigest(args.AgentID, &act),
		Reason: args.Reason, Status: ApprovalPending, CreatedAt: now, ExpiresAt: now.Add(s.cfg.HoldWindow),
	}
	if args.Ledger != nil {
		l := *args.Ledger
		a.Ledger = &l
	}
	if err := s.store.CreateApproval(ctx, a); err != nil {
		return Approval{}, fmt.Errorf("controlplane: request approval for %s: %w", args.AgentID, err)
	}
	return a.Clone(), nil
}

// Get returns one approval, or ErrNotFound.
func (s *Approvals) Get(ctx context.Context, id string) (Approval, error) {
	return s.store.GetApproval(ctx, id)
}

// List returns the approvals with the status ("" for every status), newest
// first, at most limit (no limit when limit <= 0). An unknown status is a
// *FieldError for "status".
func (s *Approvals) List(ctx context.Context, status string, limit int) ([]Approval, error) {
	if status != "" && !ValidApprovalStatus(status) {
		return nil, &FieldError{Field: "status", Msg: fmt.Sprintf("unknown status %q (want pending, approved, denied or expired)", status)}
	}
	return s.store.ListApprovals(ctx, status, limit)
}

// Decide records an operator's decision on a pending approval: approve or
// deny, with the operator's reason. It returns ErrNotFound for an unknown
// id and ErrConflict when the approval is no longer pending (decided by
// someone else, possibly at the same moment on another sidecar, or expired;
// a pending approval whose hold window has elapsed is expired here). On
// approve the action is granted to this process's governor at once (and to
// the other sidecars' as they learn of the decision) for GrantWindow.
// Waiters are woken, and CONTROL.APPROVAL_APPROVED or
// CONTROL.APPROVAL_DENIED is recorded (actor: the operator). When only the
// event fails, the decided approval is returned with the error.
func (s *Approvals) Decide(ctx context.Context, id string, approve bool, operator, reason string) (Approval, error) {
	if strings.TrimSpace(operator) == "" {
		return Approval{}, &FieldError{Field: "operator", Msg: "a decision needs an operator"}
	}
	cur, err := s.store.GetApproval(ctx, id)
	if err != nil {
		return Approval{}, err
	}
	if !cur.Pending() {
		return Approval{}, decidedConflict(&cur)
	}
	now := s.now()
	if !now.Before(cur.ExpiresAt) {
		exp, err := s.expire(ctx, cur, now)
		if exp.ID == "" && err != nil && !errors.Is(err, ErrConflict) {
			return Approval{}, err
		}
		if err != nil && exp.ID != "" {
			s.log.Error("controlplane: approval expired but its provenance event was not recorded", "approval_id", id, "err", err)
		}
		return Approval{}, fmt.Errorf("%w: approval %s expired undecided at %s", ErrConflict, id, cur.ExpiresAt.Format(time.RFC3339Nano))
	}
	next := cur.Clone()
	next.DecidedAt, next.DecidedBy, next.DecisionReason = now, operator, reason
	code := CodeApprovalDenied
	if approve {
		next.Status, next.ExpiresAt, code = ApprovalApproved, now.Add(GrantWindow), CodeApprovalApproved
	} else {
		next.Status, next.ExpiresAt = ApprovalDenied, time.Time{}
	}
	if err := s.store.DecideApproval(ctx, next); err != nil {
		if errors.Is(err, ErrConflict) {
			if latest, gerr := s.store.GetApproval(ctx, id); gerr == nil && !latest.Pending() {
				return Approval{}, decidedConflict(&latest)
			}
		}
		return Approval{}, fmt.Errorf("controlplane: decide approval %s: %w", id, err)
	}
	if approve {
		s.grant(next)
	}
	s.wake(id)
	ev := Event{ID: newID("evt_"), Timestamp: now, Actor: operator, ActorType: ActorTypeOperator, Target: id,
		ContextCode: code, Reason: reason, Details: approvalDetails(&next)}
	return next.Clone(), s.record(ctx, ev)
}

// decidedConflict is the ErrConflict of deciding a, which is decided.
func decidedConflict(a *Approval) error {
	by := ""
	if a.DecidedBy != "" {
		by = " by " + a.DecidedBy
	}
	return fmt.Errorf("%w: approval %s already %s at %s%s", ErrConflict, a.ID, a.Status, a.DecidedAt.Format(time.RFC3339Nano), by)
}

func approvalDetails(a *Approval) map[string]any {
	d := map[string]any{"agent_id": a.AgentID, "action_type": a.Action.Type, "action_target": a.Action.Target, "digest": a.Digest}
	if a.Ledger != nil {
		d["ledger_sequence"] = a.Ledger.Sequence
	}
	return d
}

func (s *Approvals) record(ctx context.Context, e Event) error {
	if err := s.events.AppendEvent(ctx, e); err != nil {
		return fmt.Errorf("controlplane: record %s event for %s: %w", e.ContextCode, e.Target, err)
	}
	return nil
}

// expire marks the pending approval cur expired (it came due at
// cur.ExpiresAt), wakes its waiters and records CONTROL.APPROVAL_EXPIRED
// with actor "system". It returns ErrConflict when cur was decided
// meanwhile; when only the event fails, the expired approval comes with the
// error.
func (s *Approvals) expire(ctx context.Context, cur Approval, now time.Time) (Approval, error) {
	next := cur.Clone()
	next.Status, next.DecidedAt, next.DecidedBy = ApprovalExpired, now, ActorSystem
	if err := s.store.DecideApproval(ctx, next); err != nil {
		return Approval{}, fmt.Errorf("controlplane: expire approval %s: %w", cur.ID, err)
	}
	s.wake(cur.ID)
	ev := Event{ID: newID("evt_"), Timestamp: now, Actor: ActorSystem, ActorType: ActorTypeSystem, Target: cur.ID,
		ContextCode: CodeApprovalExpired, Reason: "undecided within the hold window of " + s.cfg.HoldWindow.String(),
		Details: approvalDetails(&next)}
	return next, s.record(ctx, ev)
}

// ExpireDue expires every pending approval whose hold window has elapsed
// and returns how many it expired. Several processes may run it at once:
// each approval is expired (and its event recorded) by exactly one. Run
// calls it every ApprovalConfig.ExpiryInterval.
func (s *Approvals) ExpireDue(ctx context.Context) (int, error) {
	now := s.now()
	s.pruneGrants(now)
	pending, err := s.store.ListApprovals(ctx, ApprovalPending, 0)
	if err != nil {
		return 0, fmt.Errorf("controlplane: list pending approvals: %w", err)
	}
	n := 0
	var errs []error
	for _, a := range pending {
		if now.Before(a.ExpiresAt) {
			continue
		}
		exp, err := s.expire(ctx, a, now)
		if exp.ID != "" {
			n++
		}
		if err != nil && !errors.Is(err, ErrConflict) {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// Wait blocks until the approval is decided or expires, and returns it; or
// until ctx ends, returning the approval as last read (pending) with
// ctx.Err(). An approved approval is granted to this process's governor
// before Wait returns (once; see Decide), so the caller may evaluate the
// held action again and have it pass. A decision made in this process wakes
// Wait at once, one made on another sidecar through the store's signal
// (ApprovalWatcher, while Run runs); the approval is also re-read every
// ApprovalConfig.PollInterval, since signals can be lost. When the hold
// window elapses, Wait expires the approval itself. An unknown id is
// ErrNotFound; store failures are retried at the poll interval.
func (s *Approvals) Wait(ctx context.Context, id string) (Approval, error) {
	ch := make(chan struct{}, 1)
	s.addWaiter(id, ch)
	defer s.removeWaiter(id, ch)
	poll := time.NewTicker(s.cfg.PollInterval)
	defer poll.Stop()
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	var last Approval
	failing := false
	for {
		a, err := s.store.GetApproval(ctx, id)
		switch {
		case err == nil:
			failing = false
			last = a
			if !a.Pending() {
				s.grant(a)
				return a.Clone(), nil
			}
			now := s.now()
			if left := a.ExpiresAt.Sub(now); left > 0 {
				due.Reset(left)
				break
			}
			exp, err := s.expire(ctx, a, now)
			if exp.ID != "" {
				if err != nil {
					s.log.Error("controlplane: approval expired but its provenance event was not recorded", "approval_id", id, "err", err)
				}
				return exp.Clone(), nil
			}
			if errors.Is(err, ErrConflict) {
				continue // decided meanwhile: read it again
			}
			if ctx.Err() == nil {
				s.log.Warn("controlplane: expire approval; retrying", "approval_id", id, "err", err)
			}
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrClosed):
			return Approval{}, err
		case ctx.Err() != nil:
			return last.Clone(), ctx.Err()
		default:
			if !failing {
				s.log.Warn("controlplane: read approval while waiting; retrying", "approval_id", id, "err", err, "every", s.cfg.PollInterval)
			}
			failing = true
		}
		select {
		case <-ctx.Done():
			return last.Clone(), ctx.Err()
		case <-ch:
		case <-poll.C:
		case <-due.C:
		}
	}
}

func (s *Approvals) addWaiter(id string, ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waiters[id]
	if w == nil {
		w = map[chan struct{}]struct{}{}
		s.waiters[id] = w
	}
	w[ch] = struct{}{}
}

func (s *Approvals) removeWaiter(id string, ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiters[id], ch)
	if len(s.waiters[id]) == 0 {
		delete(s.waiters, id)
	}
}

// wake wakes the waiters of one approval ("" for every approval).
func (s *Approvals) wake(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for wid, w := range s.waiters {
		if id != "" && wid != id {
			continue
		}
		for ch := range w {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// grant hands an approved approval whose grant has not run out to the
// governor, once per process. An agent this governor does not serve is
// skipped quietly: another sidecar serves it.
func (s *Approvals) grant(a Approval) {
	if a.Status != ApprovalApproved || !s.now().Before(a.ExpiresAt) {
		return
	}
	s.mu.Lock()
	if _, done := s.granted[a.ID]; done {
		s.mu.Unlock()
		return
	}
	s.granted[a.ID] = a.ExpiresAt
	s.mu.Unlock()
	err := s.grants.GrantApproval(a.AgentID, a.Digest, a.ExpiresAt)
	switch {
	case errors.Is(err, governor.ErrUnknownAgent):
		s.log.Debug("controlplane: approval for an agent this process does not serve", "approval_id", a.ID, "agent_id", a.AgentID)
	case err != nil:
		s.log.Error("controlplane: grant approval", "approval_id", a.ID, "agent_id", a.AgentID, "err", err)
	}
}

// pruneGrants forgets the grants that have run out.
func (s *Approvals) pruneGrants(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.DeleteFunc(s.granted, func(_ string, exp time.Time) bool { return !now.Before(exp) })
}
