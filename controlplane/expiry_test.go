package controlplane_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// effect reports whether a directive's effect on a1 is visible through the
// governor: a verdict or the effective thresholds.
type effect func(t *testing.T, f *fixture) bool

var (
	isQuarantined effect = func(t *testing.T, f *fixture) bool { return quarantined(f.dryEval(t, "a1", readAct())) }
	isTightened   effect = func(t *testing.T, f *fixture) bool {
		return f.status(t, "a1").Thresholds != governor.DefaultConfig().Thresholds
	}
	isEnforced effect = func(t *testing.T, f *fixture) bool {
		return slices.Contains(f.dryEval(t, "a1", governor.Action{Type: "read", Target: "prod/db"}).Vetoes, "invariant:no_prod")
	}
	isReminded effect = func(t *testing.T, f *fixture) bool { return f.dryEval(t, "a1", readAct()).Advisory != "" }
)

var withDuration = []struct {
	name   string
	req    controlplane.IssueRequest
	effect effect
}{
	{"quarantine", controlplane.IssueRequest{Type: "quarantine", Target: controlplane.Target{AgentIDs: []string{"a1"}}}, isQuarantined},
	{"tighten", tighten(0.5, "a1"), isTightened},
	{"enforce", controlplane.IssueRequest{Type: "enforce", Target: controlplane.Target{AgentIDs: []string{"a1"}},
		Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{{Name: "no_prod", Expr: `!action.target.startsWith("prod/")`}}}}, isEnforced},
	{"broadcast_reminder", controlplane.IssueRequest{Type: "broadcast_reminder", Target: controlplane.Target{AgentIDs: []string{"a1"}},
		Parameters: controlplane.Parameters{Message: "mind the scope"}}, isReminded},
}

func TestDurationExpiresEvery100Evaluations(t *testing.T) {
	for _, tc := range withDuration {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			req := tc.req
			req.Duration = time.Minute
			d := f.issue(t, req)
			if !d.ExpiresAt.Equal(d.IssuedAt.Add(time.Minute)) {
				t.Errorf("got expires at %v, want issued at + 1m = %v", d.ExpiresAt, d.IssuedAt.Add(time.Minute))
			}
			if !tc.effect(t, f) {
				t.Fatalf("the directive has no effect")
			}
			// 100 evaluations before the duration elapsed: nothing expires.
			for range 100 {
				f.p.ObserveEvaluation()
			}
			if got := f.get(t, d.ID); got.Status != controlplane.StatusActive {
				t.Fatalf("before its time: got status %s, want active", got.Status)
			}
			f.clk.Advance(2 * time.Minute)
			for range 99 {
				f.p.ObserveEvaluation()
			}
			if got := f.get(t, d.ID); got.Status != controlplane.StatusActive || !tc.effect(t, f) {
				t.Fatalf("after 99 more evaluations: got status %s, want active until the 100th", got.Status)
			}
			f.p.ObserveEvaluation()
			got := f.get(t, d.ID)
			if got.Status != controlplane.StatusExpired || !got.ExpiredAt.Equal(f.clk.Now()) {
				t.Errorf("after the 100th: got status %s expired at %v, want expired at %v", got.Status, got.ExpiredAt, f.clk.Now())
			}
			if tc.effect(t, f) {
				t.Errorf("the effect outlived the directive")
			}
			if list, _ := f.p.List(context.Background()); len(list) != 0 {
				t.Errorf("got %d active directives, want 0", len(list))
			}
		})
	}
}

func TestExpireDue(t *testing.T) {
	f := newFixture(t)
	short := f.issue(t, controlplane.IssueRequest{Type: "quarantine", Target: controlplane.Target{AgentIDs: []string{"a1"}}, Duration: time.Minute})
	long := f.issue(t, controlplane.IssueRequest{Type: "tighten", Target: controlplane.Target{AgentIDs: []string{"a1"}}, Parameters: controlplane.Parameters{Factor: 0.5}, Duration: time.Hour})
	forever := f.issue(t, quarantine("a2"))
	cases := []struct {
		name        string
		advanceTo   time.Time
		wantExpired []string
		wantActive  []string
	}{
		{"nothing is due yet", short.IssuedAt.Add(time.Minute - time.Nanosecond), nil, []string{short.ID, long.ID, forever.ID}},
		{"due exactly at expires_at", short.IssuedAt.Add(time.Minute), []string{short.ID}, []string{long.ID, forever.ID}},
		{"the hour passes", long.IssuedAt.Add(2 * time.Hour), []string{long.ID}, []string{forever.ID}},
		{"a directive without duration never expires by itself", t0.Add(24 * 365 * time.Hour), nil, []string{forever.ID}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.clk.Advance(tc.advanceTo.Sub(f.clk.Now()))
			got, err := f.p.ExpireDue(context.Background())
			if err != nil {
				t.Fatalf("ExpireDue: %v", err)
			}
			var ids []string
			for _, d := range got {
				ids = append(ids, d.ID)
				if d.Status != controlplane.StatusExpired {
					t.Errorf("%s: got status %s, want expired", d.ID, d.Status)
				}
			}
			if !slices.Equal(ids, tc.wantExpired) {
				t.Errorf("got expired %v, want %v", ids, tc.wantExpired)
			}
			list, _ := f.p.List(context.Background())
			var active []string
			for _, d := range list {
				active = append(active, d.ID)
			}
			if !slices.Equal(active, tc.wantActive) {
				t.Errorf("got active %v, want %v", active, tc.wantActive)
			}
		})
	}
	f.wantQuarantined(t, "a1", false)
	f.wantQuarantined(t, "a2", true)
	if isTightened(t, f) {
		t.Errorf("a1 is still tightened after its tighten expired")
	}
}

func TestObserveEvaluationHonoursExpiryEvery(t *testing.T) {
	f := newFixture(t)
	cfg := controlplane.DefaultConfig()
	cfg.ExpiryEvery = 3
	p := newPlane(t, cfg, f.e, controlplane.NewMemoryStore(), f.clk)
	d, err := p.Issue(context.Background(), controlplane.IssueRequest{Type: "quarantine", Operator: "alice",
		Target: controlplane.Target{AgentIDs: []string{"a1"}}, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Minute)
	p.ObserveEvaluation()
	p.ObserveEvaluation()
	if got, _ := p.Get(context.Background(), d.ID); got.Status != controlplane.StatusActive {
		t.Fatalf("after 2 evaluations: got %s, want active", got.Status)
	}
	p.ObserveEvaluation()
	if got, _ := p.Get(context.Background(), d.ID); got.Status != controlplane.StatusExpired {
		t.Errorf("after 3 evaluations: got %s, want expired", got.Status)
	}
}

func TestRunExpiresOnATimer(t *testing.T) {
	f := newFixture(t)
	cfg := controlplane.DefaultConfig()
	cfg.ExpiryInterval = 5 * time.Millisecond
	p := newPlane(t, cfg, f.e, controlplane.NewMemoryStore(), f.clk)
	d, err := p.Issue(context.Background(), controlplane.IssueRequest{Type: "quarantine", Operator: "alice",
		Target: controlplane.Target{AgentIDs: []string{"a1"}}, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	f.clk.Advance(2 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _ := p.Get(context.Background(), d.ID)
		if got.Status == controlplane.StatusExpired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not expire the directive within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	f.wantQuarantined(t, "a1", false)
}

func TestExpire(t *testing.T) {
	f := newFixture(t)
	q := f.issue(t, quarantine("a1"))
	r := f.issue(t, release("a2"))
	ctx := context.Background()
	cases := []struct {
		name     string
		id       string
		operator string
		wantErr  error
	}{
		{"an unknown directive", "dir_0000000000000000", "bob", controlplane.ErrNotFound},
		{"an empty operator", q.ID, "", nil},
		{"an active directive", q.ID, "bob", nil},
		{"the same again", q.ID, "bob", controlplane.ErrConflict},
		{"a release (expired when issued)", r.ID, "bob", controlplane.ErrConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := f.p.Expire(ctx, tc.id, tc.operator)
			switch {
			case tc.operator == "":
				if fe := fieldError(t, err); fe.Field != "operator" {
					t.Errorf("got field %q, want operator", fe.Field)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("got %v, want %v", err, tc.wantErr)
				}
			default:
				if err != nil {
					t.Fatalf("Expire: %v", err)
				}
				if d.Status != controlplane.StatusExpired || !d.ExpiredAt.Equal(f.clk.Now()) {
					t.Errorf("got status %s expired at %v, want expired at %v", d.Status, d.ExpiredAt, f.clk.Now())
				}
				f.wantQuarantined(t, "a1", false)
			}
		})
	}
	if _, err := f.p.Get(ctx, "dir_nope"); !errors.Is(err, controlplane.ErrNotFound) {
		t.Errorf("Get of an unknown id: got %v, want ErrNotFound", err)
	}
	if got := f.get(t, q.ID); got.Status != controlplane.StatusExpired {
		t.Errorf("Get of an expired directive: got status %s, want expired", got.Status)
	}
}

// countingSink counts publications (the edge: it stands in for the governor
// only to show that nothing is published).
type countingSink struct {
	mu sync.Mutex
	n  int
}

func (s *countingSink) SetOverlays(governor.Overlays) { s.mu.Lock(); s.n++; s.mu.Unlock() }

func TestDisabledPlane(t *testing.T) {
	f := newFixture(t)
	// The store holds an active quarantine from an earlier, enabled run.
	if _, err := f.p.Issue(context.Background(), controlplane.IssueRequest{Type: "quarantine", Operator: "alice",
		Target: controlplane.Target{AgentIDs: []string{"a1"}}, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, f.clk)
	sink := &countingSink{}
	cfg := controlplane.DefaultConfig()
	cfg.Enabled = false
	p, err := controlplane.New(cfg, e, sink, f.store, controlplane.WithClock(f.clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.Issue(ctx, quarantine("a2")); !errors.Is(err, controlplane.ErrDisabled) {
		t.Errorf("Issue: got %v, want ErrDisabled", err)
	}
	if list, err := p.List(ctx); err != nil || list == nil || len(list) != 0 {
		t.Errorf("List: got %#v, %v; want an empty list", list, err)
	}
	f.clk.Advance(time.Minute)
	for range 200 {
		p.ObserveEvaluation()
	}
	if got, err := p.ExpireDue(ctx); err != nil || len(got) != 0 {
		t.Errorf("ExpireDue: got %v, %v; want nothing", got, err)
	}
	if _, err := p.Expire(ctx, "dir_x", "bob"); !errors.Is(err, controlplane.ErrDisabled) {
		t.Errorf("Expire: got %v, want ErrDisabled", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	cancel()
	p.Run(runCtx) // returns at once
	if sink.n != 0 {
		t.Errorf("got %d overlay publications, want none", sink.n)
	}
	d, err := e.Evaluate(governor.Request{AgentID: "a1", Action: readAct()})
	if err != nil || d.Verdict != governor.Allow || len(d.Directives) != 0 {
		t.Errorf("a1 under a disabled plane: got %v %v directives %v, want ALLOW without directives", d.Verdict, err, d.Directives)
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	f := newFixture(t)
	store := controlplane.NewMemoryStore()
	cases := []struct {
		name  string
		cfg   controlplane.Config
		fleet controlplane.Fleet
		sink  controlplane.Sink
		store controlplane.Store
	}{
		{"negative expiry_every", controlplane.Config{Enabled: true, ExpiryEvery: -1}, f.e, f.e, store},
		{"negative interval", controlplane.Config{Enabled: true, ExpiryInterval: -time.Second}, f.e, f.e, store},
		{"no fleet", controlplane.DefaultConfig(), nil, f.e, store},
		{"no sink", controlplane.DefaultConfig(), f.e, nil, store},
		{"no store", controlplane.DefaultConfig(), f.e, f.e, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := controlplane.New(tc.cfg, tc.fleet, tc.sink, tc.store); err == nil {
				t.Errorf("got nil error, want one")
			}
		})
	}
}
