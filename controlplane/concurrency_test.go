package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// TestConcurrentIssueExpireAndEvaluate issues and expires directives from
// several goroutines while others evaluate and count evaluations (run it
// with -race).
func TestConcurrentIssueExpireAndEvaluate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	agents := f.e.Agents()
	const operators, rounds, evaluators, evaluations = 4, 30, 4, 300
	var wg sync.WaitGroup
	errs := make(chan error, operators*rounds*2+evaluators*evaluations)
	for o := range operators {
		wg.Go(func() {
			for i := range rounds {
				agent := agents[(o+i)%len(agents)]
				var req controlplane.IssueRequest
				switch i % 4 {
				case 0:
					req = quarantine(agent)
				case 1:
					req = tighten(0.9, agent)
				case 2:
					req = controlplane.IssueRequest{Type: "enforce", Target: controlplane.Target{AgentIDs: []string{agent}},
						Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: fmt.Sprint("inv", o), Expr: `action.type != "drop"`}}}}
				case 3:
					req = release(agent)
				}
				req.Operator = fmt.Sprint("op", o)
				req.Duration = time.Duration(i%3) * time.Second
				if req.Type == "release" {
					req.Duration = 0
				}
				d, err := f.p.Issue(ctx, req)
				if err != nil {
					errs <- fmt.Errorf("Issue: %w", err)
					continue
				}
				if i%2 == 0 && d.Status == controlplane.StatusActive {
					// A duration or a release may expire it first.
					if _, err := f.p.Expire(ctx, d.ID, req.Operator); err != nil && !errors.Is(err, controlplane.ErrConflict) {
						errs <- fmt.Errorf("Expire: %w", err)
					}
				}
				if _, err := f.p.List(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	for w := range evaluators {
		wg.Go(func() {
			for i := range evaluations {
				agent := agents[(w+i)%len(agents)]
				if _, err := f.e.Evaluate(governor.Request{AgentID: agent, Action: readAct()}); err != nil {
					errs <- err
				}
				f.p.ObserveEvaluation()
				if i%50 == 0 {
					f.clk.Advance(time.Second)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Every active directive is consistent with Get, and expiring them all
	// leaves every agent evaluated normally.
	list, err := f.p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range list {
		if got := f.get(t, d.ID); got.Status != controlplane.StatusActive {
			t.Errorf("%s is listed active but Get says %s", d.ID, got.Status)
		}
		f.expire(t, d.ID)
	}
	for _, agent := range agents {
		if ov := f.e.Overlay(agent); ov != nil {
			t.Errorf("%s: got overlay %+v with nothing active, want none", agent, ov)
		}
		f.wantQuarantined(t, agent, false)
	}
}

// failingStore refuses writes on demand (the I/O edge).
type failingStore struct {
	*controlplane.MemoryStore
	failSave, failAppend bool
}

var errDisk = errors.New("disk on fire")

func (s *failingStore) SaveDirective(ctx context.Context, d controlplane.Directive) error {
	if s.failSave {
		return errDisk
	}
	return s.MemoryStore.SaveDirective(ctx, d)
}

func (s *failingStore) AppendEvent(ctx context.Context, e controlplane.Event) error {
	if s.failAppend {
		return errDisk
	}
	return s.MemoryStore.AppendEvent(ctx, e)
}

func TestStoreFailures(t *testing.T) {
	t.Run("a directive the store refuses is not applied", func(t *testing.T) {
		f := newFixture(t)
		store := &failingStore{MemoryStore: controlplane.NewMemoryStore(), failSave: true}
		p := newPlane(t, controlplane.DefaultConfig(), f.e, store, f.clk)
		if _, err := p.Issue(context.Background(), controlplane.IssueRequest{Type: "quarantine", Operator: "alice",
			Target: controlplane.Target{AgentIDs: []string{"a1"}}}); !errors.Is(err, errDisk) {
			t.Fatalf("Issue: got %v, want the store's error", err)
		}
		if list, _ := p.List(context.Background()); len(list) != 0 {
			t.Errorf("got %d active directives, want 0", len(list))
		}
		f.wantQuarantined(t, "a1", false)
	})
	t.Run("a lost event is reported with the directive in force", func(t *testing.T) {
		f := newFixture(t)
		store := &failingStore{MemoryStore: controlplane.NewMemoryStore(), failAppend: true}
		p := newPlane(t, controlplane.DefaultConfig(), f.e, store, f.clk)
		d, err := p.Issue(context.Background(), controlplane.IssueRequest{Type: "quarantine", Operator: "alice",
			Target: controlplane.Target{AgentIDs: []string{"a1"}}})
		if !errors.Is(err, errDisk) || d.ID == "" {
			t.Fatalf("Issue: got %q, %v; want the directive and the store's error", d.ID, err)
		}
		f.wantQuarantined(t, "a1", true)
	})
	t.Run("a refused expiry leaves the directive active", func(t *testing.T) {
		f := newFixture(t)
		store := &failingStore{MemoryStore: controlplane.NewMemoryStore()}
		p := newPlane(t, controlplane.DefaultConfig(), f.e, store, f.clk)
		d, err := p.Issue(context.Background(), controlplane.IssueRequest{Type: "quarantine", Operator: "alice",
			Target: controlplane.Target{AgentIDs: []string{"a1"}}, Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		store.failSave = true
		f.clk.Advance(time.Minute)
		if _, err := p.Expire(context.Background(), d.ID, "bob"); !errors.Is(err, errDisk) {
			t.Errorf("Expire: got %v, want the store's error", err)
		}
		if _, err := p.ExpireDue(context.Background()); !errors.Is(err, errDisk) {
			t.Errorf("ExpireDue: got %v, want the store's error", err)
		}
		f.wantQuarantined(t, "a1", true)
		store.failSave = false
		if got, err := p.ExpireDue(context.Background()); err != nil || len(got) != 1 {
			t.Errorf("ExpireDue once the store recovers: got %d, %v; want 1", len(got), err)
		}
		f.wantQuarantined(t, "a1", false)
	})
}
