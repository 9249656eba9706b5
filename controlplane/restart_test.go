package controlplane_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

func openFileStore(t testing.TB, dir string) *controlplane.FileStore {
	t.Helper()
	s, err := controlplane.OpenFileStore(dir)
	if err != nil {
		t.Fatalf("OpenFileStore: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRestartEnforcesWhatWasActive(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: t0}
	first := &fixture{clk: clk, e: newEngine(t, clk), store: openFileStore(t, dir)}
	first.p = newPlane(t, controlplane.DefaultConfig(), first.e, first.store, clk)
	q := first.issue(t, quarantine("a1"))
	tg := first.issue(t, controlplane.IssueRequest{Type: "tighten", Target: controlplane.Target{AgentIDs: []string{"a2"}},
		Parameters: controlplane.Parameters{Factor: 0.5}, Duration: time.Minute})
	enf := first.issue(t, controlplane.IssueRequest{Type: "enforce", Target: controlplane.Target{AgentIDs: []string{"a3"}}, Duration: time.Hour,
		Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: "no_prod", Expr: `!action.target.startsWith("prod/")`}}}})
	q2 := first.issue(t, quarantine("a3", "a4"))
	first.issue(t, release("a4"))
	if err := first.store.(*controlplane.FileStore).Close(); err != nil {
		t.Fatal(err)
	}

	// The process is down for two minutes: the tighten comes due meanwhile.
	clk.Advance(2 * time.Minute)
	restartedAt := clk.Now()
	second := &fixture{clk: clk, e: newEngine(t, clk), store: openFileStore(t, dir)}
	second.p = newPlane(t, controlplane.DefaultConfig(), second.e, second.store, clk)

	t.Run("the quarantine is enforced again", func(t *testing.T) {
		second.wantQuarantined(t, "a1", true)
		second.wantQuarantined(t, "a4", false) // released before the restart
		if d := second.dryEval(t, "a3", readAct()); !quarantined(d) || !slices.Equal(d.Directives, slices.Sorted(slices.Values([]string{enf.ID, q2.ID}))) {
			t.Errorf("a3: got %s by %v directives %v, want quarantined under %s and %s", d.Verdict, steps(d), d.Directives, enf.ID, q2.ID)
		}
	})
	t.Run("what came due while down is expired", func(t *testing.T) {
		got := second.get(t, tg.ID)
		if got.Status != controlplane.StatusExpired || !got.ExpiredAt.Equal(restartedAt) {
			t.Errorf("tighten: got %s expired at %v, want expired at the restart, %v", got.Status, got.ExpiredAt, restartedAt)
		}
		if th := second.status(t, "a2").Thresholds; th != governor.DefaultConfig().Thresholds {
			t.Errorf("a2: got thresholds %+v, want the defaults", th)
		}
		evs := second.events(t, controlplane.EventFilter{ContextCode: controlplane.CodeDirectiveExpired, Target: tg.ID})
		if len(evs) != 1 || evs[0].Actor != "system" || evs[0].ActorType != "system" {
			t.Errorf("got expiry events %+v, want one by system", evs)
		}
	})
	t.Run("the enforce invariant still vetoes once released", func(t *testing.T) {
		second.issue(t, release("a3"))
		d := second.eval(t, "a3", governor.Action{Type: "read", Target: "prod/db"})
		if d.Verdict != governor.Deny || !slices.Contains(d.Vetoes, "invariant:no_prod") {
			t.Errorf("got %s vetoes %v, want DENY by invariant:no_prod", d.Verdict, d.Vetoes)
		}
	})
	t.Run("everything is still there", func(t *testing.T) {
		list, _ := second.p.List(context.Background())
		var ids []string
		for _, d := range list {
			ids = append(ids, d.ID)
		}
		if want := []string{q.ID, enf.ID}; !slices.Equal(ids, want) {
			t.Errorf("got active %v, want %v (oldest first)", ids, want)
		}
		if got := second.get(t, q2.ID); !slices.Equal(got.Released, []string{"a3", "a4"}) || got.Status != controlplane.StatusExpired {
			t.Errorf("second quarantine: got %s released %v, want expired with [a3 a4]", got.Status, got.Released)
		}
		if n := len(second.events(t, controlplane.EventFilter{ContextCode: controlplane.CodeDirectiveIssued})); n != 6 {
			t.Errorf("got %d issue events, want 6", n)
		}
	})
}
