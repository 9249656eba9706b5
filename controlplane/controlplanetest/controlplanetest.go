package controlplanetest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
)

// Open returns a new, empty store; it registers its own cleanup.
type Open func(t *testing.T) controlplane.Store

// Reopen closes s and opens the same underlying data again.
type Reopen func(t *testing.T, s controlplane.Store) controlplane.Store

// Run runs the whole suite against the stores open returns. reopen may be
// nil for a store that keeps nothing across a reopen (MemoryStore); the
// reopen cases are then skipped.
func Run(t *testing.T, open Open, reopen Reopen) {
	t.Run("Empty", func(t *testing.T) { testEmpty(t, open) })
	t.Run("SaveAndLoad", func(t *testing.T) { testSaveLoad(t, open) })
	t.Run("ReplaceByID", func(t *testing.T) { testReplace(t, open) })
	t.Run("EventsNewestFirst", func(t *testing.T) { testEventsOrder(t, open) })
	t.Run("EventFilters", func(t *testing.T) { testEventFilters(t, open) })
	t.Run("EventDetails", func(t *testing.T) { testEventDetails(t, open) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrent(t, open) })
	t.Run("Reopen", func(t *testing.T) {
		if reopen == nil {
			t.Skip("the store keeps nothing across a reopen")
		}
		testReopen(t, open, reopen)
	})
}

// t0 is the suite's reference time.
var t0 = time.Date(2025, time.March, 3, 9, 30, 0, 123456789, time.UTC)

// Directive returns a directive with every field set (n varies it).
func Directive(n int) controlplane.Directive {
	issued := t0.Add(time.Duration(n) * time.Minute)
	return controlplane.Directive{
		ID:       fmt.Sprintf("dir_%016x", n),
		Type:     controlplane.Enforce,
		Operator: "alice",
		Reason:   fmt.Sprintf("reason %d", n),
		Target:   controlplane.Target{AgentIDs: []string{"a1", "a2"}, Archetype: "financial-analyst", Team: "payments", DriftStatus: "drifting"},
		Parameters: controlplane.Parameters{Invariants: []controlplane.Invariant{
			{Name: "no_prod", Expr: `!action.target.startsWith("prod/")`, Message: "stay out of production"},
		}},
		Duration:       30 * time.Minute,
		Status:         controlplane.StatusActive,
		IssuedAt:       issued,
		ExpiresAt:      issued.Add(30 * time.Minute),
		ResolvedAgents: []string{"a1", "a2"},
		Released:       []string{"a2"},
	}
}

// Event returns an event (n varies its id and time).
func Event(n int, code, actor, target string) controlplane.Event {
	return controlplane.Event{
		ID: fmt.Sprintf("evt_%016x", n), Timestamp: t0.Add(time.Duration(n) * time.Second),
		Actor: actor, ActorType: controlplane.ActorTypeOperator, Target: target, ContextCode: code,
		Reason: fmt.Sprintf("event %d", n), Details: map[string]any{"n": float64(n)},
	}
}

// asJSON is the comparison form: stores read back the JSON decoding of
// what they were given.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return string(b)
}

func load(t *testing.T, s controlplane.Store) []controlplane.Directive {
	t.Helper()
	ds, err := s.LoadDirectives(context.Background())
	if err != nil {
		t.Fatalf("LoadDirectives: %v", err)
	}
	slices.SortFunc(ds, func(a, b controlplane.Directive) int { return cmp.Compare(a.ID, b.ID) })
	return ds
}

func save(t *testing.T, s controlplane.Store, d controlplane.Directive) {
	t.Helper()
	if err := s.SaveDirective(context.Background(), d); err != nil {
		t.Fatalf("SaveDirective(%s): %v", d.ID, err)
	}
}

func appendEvent(t *testing.T, s controlplane.Store, e controlplane.Event) {
	t.Helper()
	if err := s.AppendEvent(context.Background(), e); err != nil {
		t.Fatalf("AppendEvent(%s): %v", e.ID, err)
	}
}

func events(t *testing.T, s controlplane.Store, f controlplane.EventFilter) []string {
	t.Helper()
	evs, err := s.Events(context.Background(), f)
	if err != nil {
		t.Fatalf("Events(%+v): %v", f, err)
	}
	ids := []string{}
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	return ids
}

func testEmpty(t *testing.T, open Open) {
	s := open(t)
	if ds := load(t, s); len(ds) != 0 {
		t.Errorf("LoadDirectives of an empty store: got %d directives, want 0", len(ds))
	}
	if ids := events(t, s, controlplane.EventFilter{}); len(ids) != 0 {
		t.Errorf("Events of an empty store: got %v, want none", ids)
	}
}

func testSaveLoad(t *testing.T, open Open) {
	s := open(t)
	want := []controlplane.Directive{Directive(1), Directive(2), Directive(3)}
	want[1].Type, want[1].Parameters = controlplane.Tighten, controlplane.Parameters{Factor: 0.5}
	want[1].Duration, want[1].ExpiresAt, want[1].Released = 0, time.Time{}, nil
	want[2].Type, want[2].Parameters = controlplane.Release, controlplane.Parameters{}
	want[2].Status, want[2].ExpiredAt, want[2].Duration, want[2].ExpiresAt = controlplane.StatusExpired, want[2].IssuedAt, 0, time.Time{}
	want[2].ResolvedAgents = []string{}
	for _, d := range want {
		save(t, s, d)
	}
	got := load(t, s)
	if asJSON(t, got) != asJSON(t, want) {
		t.Errorf("LoadDirectives:\n got %s\nwant %s", asJSON(t, got), asJSON(t, want))
	}
	for i := range got {
		if !got[i].IssuedAt.Equal(want[i].IssuedAt) || !got[i].ExpiresAt.Equal(want[i].ExpiresAt) || !got[i].ExpiredAt.Equal(want[i].ExpiredAt) {
			t.Errorf("directive %s: got times %v %v %v, want %v %v %v", got[i].ID, got[i].IssuedAt, got[i].ExpiresAt, got[i].ExpiredAt,
				want[i].IssuedAt, want[i].ExpiresAt, want[i].ExpiredAt)
		}
	}
}

func testReplace(t *testing.T, open Open) {
	s := open(t)
	d := Directive(1)
	save(t, s, d)
	save(t, s, Directive(2))
	d.Status, d.ExpiredAt, d.Released = controlplane.StatusExpired, t0.Add(time.Hour), []string{"a1", "a2"}
	save(t, s, d)
	got := load(t, s)
	if len(got) != 2 {
		t.Fatalf("got %d directives after replacing one, want 2", len(got))
	}
	if asJSON(t, got[0]) != asJSON(t, d) {
		t.Errorf("replaced directive:\n got %s\nwant %s", asJSON(t, got[0]), asJSON(t, d))
	}
}

func testEventsOrder(t *testing.T, open Open) {
	s := open(t)
	var want []string
	for i := 1; i <= 5; i++ {
		e := Event(i, controlplane.CodeDirectiveIssued, "alice", fmt.Sprintf("dir_%d", i))
		appendEvent(t, s, e)
		want = append([]string{e.ID}, want...)
	}
	if got := events(t, s, controlplane.EventFilter{}); !slices.Equal(got, want) {
		t.Errorf("Events: got %v, want %v (newest first)", got, want)
	}
}

func testEventFilters(t *testing.T, open Open) {
	s := open(t)
	issued, expired, released := controlplane.CodeDirectiveIssued, controlplane.CodeDirectiveExpired, controlplane.CodeDirectiveReleased
	in := []controlplane.Event{
		Event(1, issued, "alice", "dir_a"),
		Event(2, issued, "bob", "dir_b"),
		Event(3, released, "bob", "dir_a"),
		Event(4, expired, "system", "dir_b"),
		Event(5, expired, "alice", "dir_a"),
		Event(6, issued, "alice", "dir_c"),
	}
	for _, e := range in {
		appendEvent(t, s, e)
	}
	id := func(n int) string { return in[n-1].ID }
	cases := []struct {
		name string
		f    controlplane.EventFilter
		want []string
	}{
		{"everything", controlplane.EventFilter{}, []string{id(6), id(5), id(4), id(3), id(2), id(1)}},
		{"by context code", controlplane.EventFilter{ContextCode: issued}, []string{id(6), id(2), id(1)}},
		{"by actor", controlplane.EventFilter{Actor: "bob"}, []string{id(3), id(2)}},
		{"by target", controlplane.EventFilter{Target: "dir_a"}, []string{id(5), id(3), id(1)}},
		{"criteria are ANDed", controlplane.EventFilter{ContextCode: expired, Actor: "alice"}, []string{id(5)}},
		{"limit keeps the newest", controlplane.EventFilter{Limit: 2}, []string{id(6), id(5)}},
		{"limit after filtering", controlplane.EventFilter{Actor: "alice", Limit: 2}, []string{id(6), id(5)}},
		{"limit above the count", controlplane.EventFilter{Target: "dir_b", Limit: 10}, []string{id(4), id(2)}},
		{"nothing matches", controlplane.EventFilter{Actor: "carol"}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := events(t, s, tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("Events(%+v): got %v, want %v", tc.f, got, tc.want)
			}
		})
	}
}

func testEventDetails(t *testing.T, open Open) {
	s := open(t)
	e := Event(1, controlplane.CodeDirectiveIssued, "alice", "dir_a")
	e.Details = map[string]any{"type": "quarantine", "resolved_agents": []string{"a1", "a2"}, "n": 3}
	appendEvent(t, s, e)
	evs, err := s.Events(context.Background(), controlplane.EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("Events: got %d events, %v; want 1", len(evs), err)
	}
	if asJSON(t, evs[0]) != asJSON(t, e) {
		t.Errorf("event read back:\n got %s\nwant %s", asJSON(t, evs[0]), asJSON(t, e))
	}
	if !evs[0].Timestamp.Equal(e.Timestamp) {
		t.Errorf("timestamp: got %v, want %v", evs[0].Timestamp, e.Timestamp)
	}
}

func testConcurrent(t *testing.T, open Open) {
	s := open(t)
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				n := w*each + i
				if err := s.SaveDirective(context.Background(), Directive(n)); err != nil {
					errs <- err
				}
				if err := s.AppendEvent(context.Background(), Event(n, controlplane.CodeDirectiveIssued, fmt.Sprint("op", w), "x")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent write: %v", err)
	}
	if got := len(load(t, s)); got != writers*each {
		t.Errorf("got %d directives, want %d", got, writers*each)
	}
	if got := len(events(t, s, controlplane.EventFilter{})); got != writers*each {
		t.Errorf("got %d events, want %d", got, writers*each)
	}
	// Each writer's events are listed newest first.
	for w := range writers {
		ids := events(t, s, controlplane.EventFilter{Actor: fmt.Sprint("op", w)})
		var want []string
		for i := each - 1; i >= 0; i-- {
			want = append(want, Event(w*each+i, "", "", "").ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("writer %d: got events %v, want %v", w, ids, want)
		}
	}
}

func testReopen(t *testing.T, open Open, reopen Reopen) {
	s := open(t)
	d1, d2 := Directive(1), Directive(2)
	save(t, s, d1)
	save(t, s, d2)
	d1.Status, d1.ExpiredAt = controlplane.StatusExpired, t0.Add(time.Hour)
	save(t, s, d1)
	for i := 1; i <= 3; i++ {
		appendEvent(t, s, Event(i, controlplane.CodeDirectiveIssued, "alice", "dir"))
	}
	s = reopen(t, s)
	if got, want := load(t, s), []controlplane.Directive{d1, d2}; asJSON(t, got) != asJSON(t, want) {
		t.Errorf("directives after reopen:\n got %s\nwant %s", asJSON(t, got), asJSON(t, want))
	}
	appendEvent(t, s, Event(4, controlplane.CodeDirectiveExpired, "system", "dir"))
	d3 := Directive(3)
	save(t, s, d3)
	s = reopen(t, s)
	want := []string{Event(4, "", "", "").ID, Event(3, "", "", "").ID, Event(2, "", "", "").ID, Event(1, "", "", "").ID}
	if got := events(t, s, controlplane.EventFilter{}); !slices.Equal(got, want) {
		t.Errorf("events after two reopens: got %v, want %v", got, want)
	}
	if got := len(load(t, s)); got != 3 {
		t.Errorf("got %d directives after two reopens, want 3", got)
	}
}
