package controlplanetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
)

// OpenApprovals returns a new, empty approval store; it registers its own
// cleanup.
type OpenApprovals func(t *testing.T) controlplane.ApprovalStore

// ReopenApprovals closes s and opens the same underlying data again.
type ReopenApprovals func(t *testing.T, s controlplane.ApprovalStore) controlplane.ApprovalStore

// RunApprovals runs the approval suite against the stores open returns.
// reopen may be nil for a store that keeps nothing across a reopen; the
// reopen case is then skipped.
func RunApprovals(t *testing.T, open OpenApprovals, reopen ReopenApprovals) {
	t.Run("Empty", func(t *testing.T) { testApprovalsEmpty(t, open) })
	t.Run("CreateAndGet", func(t *testing.T) { testApprovalCreateGet(t, open) })
	t.Run("CreateTakenID", func(t *testing.T) { testApprovalCreateTaken(t, open) })
	t.Run("DecideOnce", func(t *testing.T) { testApprovalDecideOnce(t, open) })
	t.Run("ListByStatusNewestFirst", func(t *testing.T) { testApprovalList(t, open) })
	t.Run("ConcurrentDeciders", func(t *testing.T) { testApprovalConcurrentDeciders(t, open) })
	t.Run("ConcurrentCreates", func(t *testing.T) { testApprovalConcurrentCreates(t, open) })
	t.Run("Reopen", func(t *testing.T) {
		if reopen == nil {
			t.Skip("the store keeps nothing across a reopen")
		}
		testApprovalReopen(t, open, reopen)
	})
}

// Approval returns a pending approval with every field a pending one has
// set (n varies its id, action and creation time: a larger n is newer; the
// digest is a stand-in, which stores keep as they get it).
func Approval(n int) controlplane.Approval {
	created := t0.Add(time.Duration(n) * time.Second)
	a := controlplane.Approval{
		ID: fmt.Sprintf("apr_%016x", n), AgentID: "a1", Digest: fmt.Sprintf("%064x", n),
		Reason: fmt.Sprintf("held %d", n), Status: controlplane.ApprovalPending,
		CreatedAt: created, ExpiresAt: created.Add(10 * time.Minute),
		Ledger: &controlplane.LedgerRef{AgentID: "a1", Sequence: int64(n)},
	}
	a.Action.Type, a.Action.Target = "export", fmt.Sprintf("api.example.com/reports/%d", n)
	a.Action.Parameters = map[string]any{"format": "csv", "rows": float64(n), "filters": map[string]any{"region": "eu"}}
	return a
}

// Decided returns a decided with status by operator (expired: by "system").
func Decided(a controlplane.Approval, status, operator string) controlplane.Approval {
	a = a.Clone()
	a.Status, a.DecidedAt, a.DecidedBy, a.DecisionReason = status, a.CreatedAt.Add(time.Minute), operator, "because "+operator
	switch status {
	case controlplane.ApprovalApproved:
		a.ExpiresAt = a.DecidedAt.Add(controlplane.GrantWindow)
	case controlplane.ApprovalDenied:
		a.ExpiresAt = time.Time{}
	}
	return a
}

func create(t *testing.T, s controlplane.ApprovalStore, a controlplane.Approval) {
	t.Helper()
	if err := s.CreateApproval(context.Background(), a); err != nil {
		t.Fatalf("CreateApproval(%s): %v", a.ID, err)
	}
}

func get(t *testing.T, s controlplane.ApprovalStore, id string) controlplane.Approval {
	t.Helper()
	a, err := s.GetApproval(context.Background(), id)
	if err != nil {
		t.Fatalf("GetApproval(%s): %v", id, err)
	}
	return a
}

func list(t *testing.T, s controlplane.ApprovalStore, status string, limit int) []string {
	t.Helper()
	as, err := s.ListApprovals(context.Background(), status, limit)
	if err != nil {
		t.Fatalf("ListApprovals(%q, %d): %v", status, limit, err)
	}
	ids := []string{}
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return ids
}

// sameApproval checks that got reads back as want: the same JSON, and the
// same instants.
func sameApproval(t *testing.T, got, want controlplane.Approval) {
	t.Helper()
	if asJSON(t, got) != asJSON(t, want) {
		t.Errorf("approval %s:\n got %s\nwant %s", want.ID, asJSON(t, got), asJSON(t, want))
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) || !got.DecidedAt.Equal(want.DecidedAt) {
		t.Errorf("approval %s: got times %v %v %v, want %v %v %v", want.ID, got.CreatedAt, got.ExpiresAt, got.DecidedAt,
			want.CreatedAt, want.ExpiresAt, want.DecidedAt)
	}
}

func testApprovalsEmpty(t *testing.T, open OpenApprovals) {
	s := open(t)
	ctx := context.Background()
	for _, status := range []string{"", controlplane.ApprovalPending, controlplane.ApprovalApproved} {
		if ids := list(t, s, status, 0); len(ids) != 0 {
			t.Errorf("ListApprovals(%q) of an empty store: got %v, want none", status, ids)
		}
	}
	if _, err := s.GetApproval(ctx, "apr_missing"); !errors.Is(err, controlplane.ErrNotFound) {
		t.Errorf("GetApproval(unknown): got %v, want ErrNotFound", err)
	}
	if err := s.DecideApproval(ctx, Decided(Approval(1), controlplane.ApprovalApproved, "alice")); !errors.Is(err, controlplane.ErrNotFound) {
		t.Errorf("DecideApproval(unknown): got %v, want ErrNotFound", err)
	}
}

func testApprovalCreateGet(t *testing.T, open OpenApprovals) {
	s := open(t)
	want := Approval(1)
	create(t, s, want)
	sameApproval(t, get(t, s, want.ID), want)

	bare := Approval(2)
	bare.Action.Parameters, bare.Ledger, bare.Reason = nil, nil, ""
	create(t, s, bare)
	got := get(t, s, bare.ID)
	sameApproval(t, got, bare)
	if got.Ledger != nil {
		t.Errorf("approval without a ledger entry: got ledger %+v, want nil", got.Ledger)
	}
}

func testApprovalCreateTaken(t *testing.T, open OpenApprovals) {
	s := open(t)
	a := Approval(1)
	create(t, s, a)
	other := Approval(2)
	other.ID = a.ID
	if err := s.CreateApproval(context.Background(), other); !errors.Is(err, controlplane.ErrConflict) {
		t.Errorf("CreateApproval(taken id): got %v, want ErrConflict", err)
	}
	sameApproval(t, get(t, s, a.ID), a)
}

func testApprovalDecideOnce(t *testing.T, open OpenApprovals) {
	ctx := context.Background()
	for _, status := range []string{controlplane.ApprovalApproved, controlplane.ApprovalDenied, controlplane.ApprovalExpired} {
		t.Run(status, func(t *testing.T) {
			s := open(t)
			a := Approval(1)
			create(t, s, a)
			still := a.Clone()
			still.Reason = "changed but still pending"
			if err := s.DecideApproval(ctx, still); err == nil {
				t.Errorf("DecideApproval(status pending): got nil, want an error")
			}
			d := Decided(a, status, "alice")
			if err := s.DecideApproval(ctx, d); err != nil {
				t.Fatalf("DecideApproval(%s): %v", status, err)
			}
			sameApproval(t, get(t, s, a.ID), d)
			for _, again := range []string{controlplane.ApprovalApproved, controlplane.ApprovalDenied, controlplane.ApprovalExpired} {
				if err := s.DecideApproval(ctx, Decided(a, again, "bob")); !errors.Is(err, controlplane.ErrConflict) {
					t.Errorf("DecideApproval(%s) of an approval %s: got %v, want ErrConflict", again, status, err)
				}
			}
			sameApproval(t, get(t, s, a.ID), d)
			if ids := list(t, s, controlplane.ApprovalPending, 0); len(ids) != 0 {
				t.Errorf("pending after the decision: got %v, want none", ids)
			}
			if ids := list(t, s, status, 0); !slices.Equal(ids, []string{a.ID}) {
				t.Errorf("ListApprovals(%s): got %v, want [%s]", status, ids, a.ID)
			}
		})
	}
}

func testApprovalList(t *testing.T, open OpenApprovals) {
	s := open(t)
	ctx := context.Background()
	// Created out of order; 1..6, newest is 6.
	for _, n := range []int{3, 1, 6, 2, 5, 4} {
		create(t, s, Approval(n))
	}
	decide := map[int]string{2: controlplane.ApprovalApproved, 4: controlplane.ApprovalDenied, 5: controlplane.ApprovalExpired, 6: controlplane.ApprovalApproved}
	for n, status := range decide {
		if err := s.DecideApproval(ctx, Decided(Approval(n), status, "alice")); err != nil {
			t.Fatalf("DecideApproval(%d, %s): %v", n, status, err)
		}
	}
	id := func(ns ...int) []string {
		out := []string{}
		for _, n := range ns {
			out = append(out, Approval(n).ID)
		}
		return out
	}
	cases := []struct {
		status string
		limit  int
		want   []string
	}{
		{"", 0, id(6, 5, 4, 3, 2, 1)},
		{"", 2, id(6, 5)},
		{"", 100, id(6, 5, 4, 3, 2, 1)},
		{controlplane.ApprovalPending, 0, id(3, 1)},
		{controlplane.ApprovalPending, 1, id(3)},
		{controlplane.ApprovalApproved, 0, id(6, 2)},
		{controlplane.ApprovalDenied, 0, id(4)},
		{controlplane.ApprovalExpired, 5, id(5)},
	}
	for _, tc := range cases {
		if got := list(t, s, tc.status, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("ListApprovals(%q, %d): got %v, want %v", tc.status, tc.limit, got, tc.want)
		}
	}
	got, err := s.ListApprovals(ctx, controlplane.ApprovalApproved, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("ListApprovals(approved, 1): got %d, %v; want one", len(got), err)
	}
	sameApproval(t, got[0], Decided(Approval(6), controlplane.ApprovalApproved, "alice"))
}

func testApprovalConcurrentDeciders(t *testing.T, open OpenApprovals) {
	s := open(t)
	ctx := context.Background()
	const approvals, deciders = 5, 8
	for n := range approvals {
		create(t, s, Approval(n))
	}
	for n := range approvals {
		var wg sync.WaitGroup
		errs := make([]error, deciders)
		start := make(chan struct{})
		for i := range deciders {
			status := controlplane.ApprovalApproved
			if i%2 == 1 {
				status = controlplane.ApprovalDenied
			}
			d := Decided(Approval(n), status, fmt.Sprintf("op%d", i))
			wg.Go(func() {
				<-start
				errs[i] = s.DecideApproval(ctx, d)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("approval %d: deciders %d and %d both won", n, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, controlplane.ErrConflict):
				t.Errorf("approval %d: decider %d: got %v, want nil or ErrConflict", n, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("approval %d: got no winner among %d deciders, want exactly one", n, deciders)
		}
		if got := get(t, s, Approval(n).ID); got.DecidedBy != fmt.Sprintf("op%d", winner) {
			t.Errorf("approval %d: got decided by %q, want the winner op%d", n, got.DecidedBy, winner)
		}
	}
}

func testApprovalConcurrentCreates(t *testing.T, open OpenApprovals) {
	s := open(t)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := s.CreateApproval(context.Background(), Approval(i)); err != nil {
				t.Errorf("CreateApproval(%d): %v", i, err)
			}
		})
	}
	wg.Wait()
	if ids := list(t, s, controlplane.ApprovalPending, 0); len(ids) != n {
		t.Errorf("after %d concurrent creates: got %d pending, want %d", n, len(ids), n)
	}
}

func testApprovalReopen(t *testing.T, open OpenApprovals, reopen ReopenApprovals) {
	s := open(t)
	ctx := context.Background()
	for n := 1; n <= 3; n++ {
		create(t, s, Approval(n))
	}
	approved := Decided(Approval(2), controlplane.ApprovalApproved, "alice")
	if err := s.DecideApproval(ctx, approved); err != nil {
		t.Fatalf("DecideApproval: %v", err)
	}
	s = reopen(t, s)
	sameApproval(t, get(t, s, Approval(1).ID), Approval(1))
	sameApproval(t, get(t, s, approved.ID), approved)
	if got, want := list(t, s, "", 0), []string{Approval(3).ID, Approval(2).ID, Approval(1).ID}; !slices.Equal(got, want) {
		t.Errorf("after reopen: got %v, want %v", got, want)
	}
	if err := s.DecideApproval(ctx, Decided(Approval(2), controlplane.ApprovalDenied, "bob")); !errors.Is(err, controlplane.ErrConflict) {
		t.Errorf("deciding again after reopen: got %v, want ErrConflict", err)
	}
	denied := Decided(Approval(3), controlplane.ApprovalDenied, "bob")
	if err := s.DecideApproval(ctx, denied); err != nil {
		t.Fatalf("DecideApproval after reopen: %v", err)
	}
	create(t, s, Approval(4))
	s = reopen(t, s)
	sameApproval(t, get(t, s, denied.ID), denied)
	if got, want := list(t, s, controlplane.ApprovalPending, 0), []string{Approval(4).ID, Approval(1).ID}; !slices.Equal(got, want) {
		t.Errorf("pending after a second reopen: got %v, want %v", got, want)
	}
}
