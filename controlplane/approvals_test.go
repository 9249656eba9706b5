package controlplane_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

var _ controlplane.Grantor = (*governor.Engine)(nil)

// exportAct is an action of agent "x1" that human_override always holds
// (its type is listed) and that passes once approved.
var exportAct = governor.Action{Type: "export", Target: "api.example.com/reports/7", Parameters: map[string]any{"format": "csv", "rows": 10.0}}

// approvalAgent is the contract of "x1".
var approvalAgent = governor.Contract{AgentID: "x1", Scope: []string{"*"}, HumanOverride: []string{"export"}}

// approvalFixture is one process: an engine serving x1 and the override
// queue over store.
type approvalFixture struct {
	e     *governor.Engine
	store interface {
		controlplane.ApprovalStore
		controlplane.Store
	}
	q *controlplane.Approvals
}

func newApprovalEngine(t testing.TB, clock func() time.Time) *governor.Engine {
	t.Helper()
	var opts []governor.Option
	if clock != nil {
		opts = append(opts, governor.WithClock(clock))
	}
	e, err := governor.New(governor.DefaultConfig(), opts...)
	if err != nil {
		t.Fatalf("governor.New: %v", err)
	}
	if err := e.SetContract(approvalAgent); err != nil {
		t.Fatalf("SetContract: %v", err)
	}
	return e
}

func newApprovals(t testing.TB, cfg controlplane.ApprovalConfig, store interface {
	controlplane.ApprovalStore
	controlplane.Store
}, clock func() time.Time) *approvalFixture {
	t.Helper()
	e := newApprovalEngine(t, clock)
	opts := []controlplane.ApprovalOption{controlplane.WithApprovalLogger(slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))}
	if clock != nil {
		opts = append(opts, controlplane.WithApprovalClock(clock))
	}
	q, err := controlplane.NewApprovals(cfg, store, store, e, opts...)
	if err != nil {
		t.Fatalf("NewApprovals: %v", err)
	}
	return &approvalFixture{e: e, store: store, q: q}
}

// run runs f.q.Run until the test ends.
func (f *approvalFixture) run(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.q.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// escalate evaluates exportAct (changing state) and requests an approval
// for it, as the proxy or the evaluate route does.
func (f *approvalFixture) escalate(t testing.TB) controlplane.Approval {
	t.Helper()
	d := f.eval(t)
	if d.Verdict != governor.Escalate {
		t.Fatalf("before approval: got %s (%s), want ESCALATE", d.Verdict, d.Reasoning)
	}
	a, err := f.q.Request(context.Background(), controlplane.RequestArgs{AgentID: "x1", Action: exportAct, Reason: d.Reasoning,
		Ledger: &controlplane.LedgerRef{AgentID: "x1", Sequence: 7}})
	if err != nil {
		t.Fatalf("Request: %v", err)
	}
	return a
}

func (f *approvalFixture) eval(t testing.TB) *governor.Decision {
	t.Helper()
	d, err := f.e.Evaluate(governor.Request{AgentID: "x1", Action: exportAct})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return d
}

// dryRun evaluates exportAct without changing state (an approval is not
// used up).
func (f *approvalFixture) dryRun(t testing.TB) *governor.Decision {
	t.Helper()
	d, err := f.e.Evaluate(governor.Request{AgentID: "x1", Action: exportAct, DryRun: true})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return d
}

// wantAllowedOnce checks that the identical action passes once, then is
// held again (the approval is used up).
func (f *approvalFixture) wantAllowedOnce(t testing.TB) {
	t.Helper()
	if d := f.eval(t); d.Verdict != governor.Allow {
		t.Fatalf("retry after approval: got %s (%s), want ALLOW", d.Verdict, d.Reasoning)
	}
	if d := f.eval(t); d.Verdict != governor.Escalate {
		t.Errorf("second retry: got %s, want ESCALATE (the approval is used up)", d.Verdict)
	}
}

func (f *approvalFixture) events(t testing.TB, code string) []controlplane.Event {
	t.Helper()
	evs, err := f.store.Events(context.Background(), controlplane.EventFilter{ContextCode: code})
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	return evs
}

func TestApprovalRequest(t *testing.T) {
	clk := &fakeClock{t: t0}
	f := newApprovals(t, controlplane.ApprovalConfig{HoldWindow: 5 * time.Minute}, controlplane.NewMemoryStore(), clk.Now)
	a := f.escalate(t)
	if a.Status != controlplane.ApprovalPending || a.AgentID != "x1" || a.Action.Type != "export" || a.Action.Target != exportAct.Target {
		t.Errorf("Request: got %+v, want a pending approval of x1's export", a)
	}
	if want := governor.ActionDigest("x1", &exportAct); a.Digest != want {
		t.Errorf("digest: got %s, want %s", a.Digest, want)
	}
	if !a.CreatedAt.Equal(t0) || !a.ExpiresAt.Equal(t0.Add(5*time.Minute)) || !a.DecidedAt.IsZero() {
		t.Errorf("times: got created %v expires %v decided %v, want %v, +5m, zero", a.CreatedAt, a.ExpiresAt, a.DecidedAt, t0)
	}
	if a.Ledger == nil || a.Ledger.Sequence != 7 || a.Reason == "" {
		t.Errorf("ledger %+v reason %q: want sequence 7 and the decision's reasoning", a.Ledger, a.Reason)
	}
	got, err := f.q.Get(context.Background(), a.ID)
	if err != nil || got.ID != a.ID {
		t.Errorf("Get: got %+v, %v", got, err)
	}
	list, err := f.q.List(context.Background(), controlplane.ApprovalPending, 10)
	if err != nil || len(list) != 1 || list[0].ID != a.ID {
		t.Errorf("List(pending): got %v, %v; want [%s]", list, err, a.ID)
	}
	var fe *controlplane.FieldError
	if _, err := f.q.List(context.Background(), "maybe", 10); !errors.As(err, &fe) || fe.Field != "status" {
		t.Errorf("List(unknown status): got %v, want a FieldError for status", err)
	}
	if _, err := f.q.Request(context.Background(), controlplane.RequestArgs{Action: exportAct}); err == nil {
		t.Errorf("Request without an agent: got nil, want an error")
	}
}

func TestApprovalDecide(t *testing.T) {
	cases := []struct {
		name      string
		approve   bool
		status    string
		code      string
		wantAllow bool
	}{
		{"approve", true, controlplane.ApprovalApproved, controlplane.CodeApprovalApproved, true},
		{"deny", false, controlplane.ApprovalDenied, controlplane.CodeApprovalDenied, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: t0}
			f := newApprovals(t, controlplane.ApprovalConfig{}, controlplane.NewMemoryStore(), clk.Now)
			a := f.escalate(t)
			clk.Advance(time.Minute)
			ctx := context.Background()
			got, err := f.q.Decide(ctx, a.ID, tc.approve, "alice", "checked with the customer")
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if got.Status != tc.status || got.DecidedBy != "alice" || got.DecisionReason != "checked with the customer" || !got.DecidedAt.Equal(t0.Add(time.Minute)) {
				t.Errorf("Decide: got %+v, want %s by alice at t0+1m", got, tc.status)
			}
			wantExpires := time.Time{}
			if tc.approve {
				wantExpires = t0.Add(time.Minute + controlplane.GrantWindow)
			}
			if !got.ExpiresAt.Equal(wantExpires) {
				t.Errorf("expires_at: got %v, want %v", got.ExpiresAt, wantExpires)
			}
			if tc.wantAllow {
				f.wantAllowedOnce(t)
			} else if d := f.eval(t); d.Verdict != governor.Escalate {
				t.Errorf("retry after a denial: got %s, want ESCALATE", d.Verdict)
			}
			for _, again := range []bool{true, false} {
				if _, err := f.q.Decide(ctx, a.ID, again, "bob", ""); !errors.Is(err, controlplane.ErrConflict) {
					t.Errorf("Decide(approve=%v) of a decided approval: got %v, want ErrConflict", again, err)
				}
			}
			if _, err := f.q.Decide(ctx, "apr_unknown", true, "bob", ""); !errors.Is(err, controlplane.ErrNotFound) {
				t.Errorf("Decide(unknown): got %v, want ErrNotFound", err)
			}
			evs := f.events(t, tc.code)
			if len(evs) != 1 {
				t.Fatalf("%s events: got %d, want 1", tc.code, len(evs))
			}
			if e := evs[0]; e.Actor != "alice" || e.ActorType != controlplane.ActorTypeOperator || e.Target != a.ID || e.Reason != "checked with the customer" || e.Details["agent_id"] != "x1" {
				t.Errorf("event: got %+v", e)
			}
		})
	}
}

func TestApprovalGrantRunsOut(t *testing.T) {
	clk := &fakeClock{t: t0}
	f := newApprovals(t, controlplane.ApprovalConfig{}, controlplane.NewMemoryStore(), clk.Now)
	a := f.escalate(t)
	if _, err := f.q.Decide(context.Background(), a.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	clk.Advance(controlplane.GrantWindow)
	if d := f.eval(t); d.Verdict != governor.Escalate {
		t.Errorf("retry %v after the approval: got %s, want ESCALATE", controlplane.GrantWindow, d.Verdict)
	}
}

func TestApprovalExpiry(t *testing.T) {
	clk := &fakeClock{t: t0}
	store := controlplane.NewMemoryStore()
	f := newApprovals(t, controlplane.ApprovalConfig{HoldWindow: time.Minute}, store, clk.Now)
	ctx := context.Background()
	due := f.escalate(t)
	clk.Advance(30 * time.Second)
	notYet := f.escalate(t)
	clk.Advance(30 * time.Second) // due is due now, notYet in 30s

	// Deciding a due approval expires it instead.
	if _, err := f.q.Decide(ctx, due.ID, true, "alice", ""); !errors.Is(err, controlplane.ErrConflict) {
		t.Fatalf("Decide(due): got %v, want ErrConflict", err)
	}
	if got, _ := f.q.Get(ctx, due.ID); got.Status != controlplane.ApprovalExpired || got.DecidedBy != controlplane.ActorSystem || !got.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("due approval after Decide: got %+v, want expired by system", got)
	}
	if d := f.eval(t); d.Verdict != governor.Escalate {
		t.Errorf("retry of an expired approval: got %s, want ESCALATE", d.Verdict)
	}
	if n, err := f.q.ExpireDue(ctx); err != nil || n != 0 {
		t.Errorf("ExpireDue with nothing due: got %d, %v; want 0", n, err)
	}
	clk.Advance(30 * time.Second)
	// A second queue on the same store races the first: each approval is
	// expired once.
	other := newApprovals(t, controlplane.ApprovalConfig{HoldWindow: time.Minute}, store, clk.Now)
	n1, err1 := f.q.ExpireDue(ctx)
	n2, err2 := other.q.ExpireDue(ctx)
	if err1 != nil || err2 != nil || n1+n2 != 1 {
		t.Errorf("ExpireDue: got %d, %v and %d, %v; want one expiry in all", n1, err1, n2, err2)
	}
	if got, _ := f.q.Get(ctx, notYet.ID); got.Status != controlplane.ApprovalExpired {
		t.Errorf("after ExpireDue: got %s, want expired", got.Status)
	}
	evs := f.events(t, controlplane.CodeApprovalExpired)
	if len(evs) != 2 {
		t.Fatalf("expired events: got %d, want 2", len(evs))
	}
	for _, e := range evs {
		if e.Actor != controlplane.ActorSystem || e.ActorType != controlplane.ActorTypeSystem {
			t.Errorf("expired event: got actor %q (%s), want system", e.Actor, e.ActorType)
		}
	}
}

func TestApprovalRunExpires(t *testing.T) {
	f := newApprovals(t, controlplane.ApprovalConfig{HoldWindow: 50 * time.Millisecond, ExpiryInterval: 10 * time.Millisecond}, controlplane.NewMemoryStore(), nil)
	f.run(t)
	a := f.escalate(t)
	deadline := time.Now().Add(2 * time.Second)
	for {
		got, err := f.q.Get(context.Background(), a.ID)
		if err == nil && got.Status == controlplane.ApprovalExpired {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("2s after the hold window: got %s, %v; want expired by Run", got.Status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitResult is what a Wait in a goroutine returned, and when.
type waitResult struct {
	a   controlplane.Approval
	err error
	at  time.Time
}

func waitAsync(ctx context.Context, q *controlplane.Approvals, id string) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		a, err := q.Wait(ctx, id)
		out <- waitResult{a, err, time.Now()}
	}()
	return out
}

func receive(t testing.TB, ch <-chan waitResult, within time.Duration) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(within):
		t.Fatalf("Wait: still waiting after %v", within)
		return waitResult{}
	}
}

func TestApprovalWaitWokenInProcess(t *testing.T) {
	// No polling to speak of: only the in-process wake-up can release it.
	f := newApprovals(t, controlplane.ApprovalConfig{PollInterval: time.Hour}, controlplane.NewMemoryStore(), nil)
	for _, approve := range []bool{true, false} {
		a := f.escalate(t)
		ch := waitAsync(context.Background(), f.q, a.ID)
		time.Sleep(20 * time.Millisecond) // let Wait start waiting
		decided := time.Now()
		if _, err := f.q.Decide(context.Background(), a.ID, approve, "alice", ""); err != nil {
			t.Fatal(err)
		}
		r := receive(t, ch, 2*time.Second)
		if r.err != nil || r.a.ID != a.ID || r.a.Pending() {
			t.Fatalf("Wait: got %+v, %v; want the decided approval", r.a, r.err)
		}
		if lag := r.at.Sub(decided); lag > 500*time.Millisecond {
			t.Errorf("Wait returned %v after the decision, want at once", lag)
		}
		if approve {
			f.wantAllowedOnce(t)
		}
	}
}

func TestApprovalWaitDecidedAlready(t *testing.T) {
	f := newApprovals(t, controlplane.ApprovalConfig{PollInterval: time.Hour}, controlplane.NewMemoryStore(), nil)
	a := f.escalate(t)
	if _, err := f.q.Decide(context.Background(), a.ID, false, "alice", ""); err != nil {
		t.Fatal(err)
	}
	r := receive(t, waitAsync(context.Background(), f.q, a.ID), time.Second)
	if r.err != nil || r.a.Status != controlplane.ApprovalDenied {
		t.Errorf("Wait on a denied approval: got %s, %v; want denied at once", r.a.Status, r.err)
	}
	if _, err := f.q.Wait(context.Background(), "apr_unknown"); !errors.Is(err, controlplane.ErrNotFound) {
		t.Errorf("Wait(unknown): got %v, want ErrNotFound", err)
	}
}

func TestApprovalWaitReturnsOnExpiry(t *testing.T) {
	// Nobody runs ExpireDue: Wait expires the approval itself.
	f := newApprovals(t, controlplane.ApprovalConfig{HoldWindow: 100 * time.Millisecond, PollInterval: time.Hour}, controlplane.NewMemoryStore(), nil)
	a := f.escalate(t)
	r := receive(t, waitAsync(context.Background(), f.q, a.ID), 2*time.Second)
	if r.err != nil || r.a.Status != controlplane.ApprovalExpired {
		t.Fatalf("Wait past the hold window: got %s, %v; want expired", r.a.Status, r.err)
	}
	if r.at.Before(a.ExpiresAt) {
		t.Errorf("Wait returned at %v, before the approval's expiry %v", r.at, a.ExpiresAt)
	}
	if evs := f.events(t, controlplane.CodeApprovalExpired); len(evs) != 1 || evs[0].Target != a.ID {
		t.Errorf("expired events: got %+v, want one for %s", evs, a.ID)
	}
}

func TestApprovalWaitHonoursContext(t *testing.T) {
	f := newApprovals(t, controlplane.ApprovalConfig{}, controlplane.NewMemoryStore(), nil)
	a := f.escalate(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := waitAsync(ctx, f.q, a.ID)
	time.Sleep(20 * time.Millisecond)
	cancel()
	r := receive(t, ch, time.Second)
	if !errors.Is(r.err, context.Canceled) || r.a.ID != a.ID || !r.a.Pending() {
		t.Errorf("Wait with its context cancelled: got %+v, %v; want the pending approval and context.Canceled", r.a, r.err)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer tcancel()
	if _, err := f.q.Wait(tctx, a.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past its deadline (a proxy's hold): got %v, want context.DeadlineExceeded", err)
	}
	if got, _ := f.q.Get(context.Background(), a.ID); !got.Pending() {
		t.Errorf("after the waits ended: got %s, want still pending", got.Status)
	}
}

// Two processes share a store that signals nothing (no watcher): B learns
// of A's decision by polling alone, and grants it to its own engine.
func TestApprovalWaitPollsWithoutSignal(t *testing.T) {
	store := controlplane.NewMemoryStore()
	cfg := controlplane.ApprovalConfig{PollInterval: 50 * time.Millisecond}
	a, b := newApprovals(t, cfg, store, nil), newApprovals(t, cfg, store, nil)
	ap := b.escalate(t)
	ch := waitAsync(context.Background(), b.q, ap.ID)
	time.Sleep(20 * time.Millisecond)
	if _, err := a.q.Decide(context.Background(), ap.ID, true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	r := receive(t, ch, 2*time.Second)
	if r.err != nil || r.a.Status != controlplane.ApprovalApproved {
		t.Fatalf("Wait on B: got %s, %v; want approved", r.a.Status, r.err)
	}
	b.wantAllowedOnce(t)
	// A granted it to its own engine when it decided.
	a.wantAllowedOnce(t)
}

func TestApprovalConcurrentDecide(t *testing.T) {
	store := controlplane.NewMemoryStore()
	a, b := newApprovals(t, controlplane.ApprovalConfig{}, store, nil), newApprovals(t, controlplane.ApprovalConfig{}, store, nil)
	ap := a.escalate(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, q := range []*controlplane.Approvals{a.q, b.q} {
		wg.Go(func() { _, errs[i] = q.Decide(context.Background(), ap.ID, i == 0, "op", "") })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("two deciders: got %v and %v, want exactly one to win", errs[0], errs[1])
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, controlplane.ErrConflict) {
			t.Errorf("loser: got %v, want ErrConflict", err)
		}
	}
	approved := len(a.events(t, controlplane.CodeApprovalApproved))
	denied := len(a.events(t, controlplane.CodeApprovalDenied))
	if approved+denied != 1 {
		t.Errorf("decision events: got %d approved and %d denied, want one in all", approved, denied)
	}
}

func TestApprovalConfigValidate(t *testing.T) {
	if err := (controlplane.ApprovalConfig{HoldWindow: -1}).Validate(); err == nil {
		t.Errorf("negative hold window: got nil, want an error")
	}
	if err := controlplane.DefaultApprovalConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if _, err := controlplane.NewApprovals(controlplane.ApprovalConfig{}, nil, nil, nil); err == nil {
		t.Errorf("NewApprovals without stores: got nil, want an error")
	}
}
