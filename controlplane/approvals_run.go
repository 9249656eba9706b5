package controlplane

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Run expires the pending approvals whose hold window elapsed every
// ApprovalConfig.ExpiryInterval until ctx ends. When the store is an
// ApprovalWatcher (Redis), Run also follows the decisions other processes
// record: for each one it wakes the local waiters of the approval and, for
// an approval, grants the action to this process's governor (once). On
// every re-subscription after the first — pub/sub drops what is published
// while a subscriber is disconnected — it wakes every waiter and grants the
// approved approvals whose grant is still running. Decisions recorded
// before this process first subscribed are not granted here (fail closed:
// the agent's retry escalates again and asks anew). Errors go to the
// logger. Run returns once its goroutines have stopped.
func (s *Approvals) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if w, ok := s.store.(ApprovalWatcher); ok {
		q := &decisionQueue{signal: make(chan struct{}, 1), ids: map[string]struct{}{}}
		wg.Go(func() { s.watch(ctx, w, q) })
		wg.Go(func() { s.follow(ctx, q) })
	}
	t := time.NewTicker(s.cfg.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.ExpireDue(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("controlplane: expire due approvals", "err", err)
			}
		}
	}
}

// decisionQueue coalesces the decision signals of a watcher: the ids not
// yet handled, and whether a resubscription asks for a full resync.
type decisionQueue struct {
	signal chan struct{} // room for one: a pending wake-up of follow

	mu            sync.Mutex
	ids           map[string]struct{}
	resync        bool
	subscriptions int
}

// push is the watcher's callback; it never blocks.
func (q *decisionQueue) push(id string) {
	q.mu.Lock()
	if id == "" {
		// The first subscription only starts the watch: what was decided
		// before is not this process's to grant.
		q.subscriptions++
		q.resync = q.resync || q.subscriptions > 1
	} else {
		q.ids[id] = struct{}{}
	}
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// take returns and clears what is queued.
func (q *decisionQueue) take() (ids []string, resync bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id := range q.ids {
		ids = append(ids, id)
	}
	clear(q.ids)
	resync, q.resync = q.resync, false
	return ids, resync
}

// watch runs w.WatchApprovals until ctx ends, watching again after a
// failure.
func (s *Approvals) watch(ctx context.Context, w ApprovalWatcher, q *decisionQueue) {
	keepWatching(ctx, s.log, "approval decisions", func(ctx context.Context) error { return w.WatchApprovals(ctx, q.push) })
}

// follow handles the queued signals until ctx ends.
func (s *Approvals) follow(ctx context.Context, q *decisionQueue) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.signal:
		}
		ids, resync := q.take()
		if resync {
			s.resync(ctx)
		}
		for _, id := range ids {
			s.learn(ctx, id)
		}
	}
}

// learn handles the signal of one decision: the waiters re-read the
// approval themselves; an approval is granted here.
func (s *Approvals) learn(ctx context.Context, id string) {
	s.wake(id)
	a, err := s.store.GetApproval(ctx, id)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, ErrNotFound) {
			s.log.Error("controlplane: read a decided approval", "approval_id", id, "err", err)
		}
		return
	}
	s.grant(a)
}

// resync wakes every waiter and grants the approved approvals whose grant
// is still running, after a resubscription.
func (s *Approvals) resync(ctx context.Context) {
	s.wake("")
	approved, err := s.store.ListApprovals(ctx, ApprovalApproved, 0)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("controlplane: resync approvals after a resubscription", "err", err)
		}
		return
	}
	for _, a := range approved {
		s.grant(a)
	}
}
