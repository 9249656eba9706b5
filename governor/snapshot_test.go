package governor

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var snapshotContract = Contract{
	AgentID: "a", Archetype: "data-processing", Scope: []string{"read", "write", "query", "archive"},
	Anchors:     map[string]string{"refund": "give money back"},
	TimeWindows: map[string]TimeWindow{"write": {StartHour: 0, EndHour: 24, MinIntervalSeconds: 5}},
	Limits:      Limits{ActionsPerMinute: 50},
}

// exercise gives agent "a" a varied history: allows, denials, escalations,
// anchor terms, calls, approvals and several drift recomputations.
func exercise(t *testing.T, e *Engine, clk *fakeClock) {
	t.Helper()
	types := []string{"read", "write", "query", "archive", "delete", "read", "read"}
	for i := range 57 {
		typ := types[i%len(types)]
		req := Request{AgentID: "a", Action: Action{ID: "act_" + typ + "_" + strconv.Itoa(i), Type: typ, Target: "data/" + typ, Parameters: map[string]any{"n": float64(i % 3)}}}
		if i%4 == 0 {
			req.Context.Instruction = "process the refund"
		}
		evalReq(t, e, req)
		clk.Advance(7 * time.Second)
		if i%9 == 0 {
			_ = e.CallStarted("a")
			_ = e.CallFinished("a", CallOutcome(1+i%2))
		}
	}
	appr := Action{Type: "delete", Target: "data/x", Parameters: map[string]any{"n": 1.0}}
	if err := e.GrantApproval("a", ActionDigest("a", &appr), clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func snapshotRoundTrip(t *testing.T, e *Engine) *Snapshot {
	t.Helper()
	snap, err := e.Snapshot("a")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.AgentID != "a" || !back.TakenAt.Equal(snap.TakenAt) {
		t.Errorf("got snapshot header %s %v, want a %v", back.AgentID, back.TakenAt, snap.TakenAt)
	}
	return &back
}

func comparableDecision(d *Decision) *Decision {
	c := *d
	c.Elapsed = 0
	c.Pipeline = nil
	return &c
}

func TestSnapshotRestoreReproducesState(t *testing.T) {
	orig, clk := engineWith(t, snapshotContract)
	exercise(t, orig, clk)
	if h := mustDriftHistory(t, orig, "a"); len(h) < 3 {
		t.Fatalf("setup: got %d drift points, want several", len(h))
	}

	fresh, clk2 := engineWith(t, snapshotContract)
	clk2.Set(clk.Now())
	if err := fresh.Restore(snapshotRoundTrip(t, orig)); err != nil {
		t.Fatalf("Restore: %v", err)
	}

	want, got := mustStatus(t, orig, "a"), mustStatus(t, fresh, "a")
	if got.Trust != want.Trust || got.Observations != want.Observations || got.Violations != want.Violations {
		t.Errorf("got trust %v observations %d violations %d, want %v %d %d", got.Trust, got.Observations, got.Violations, want.Trust, want.Observations, want.Violations)
	}
	if got.Drift != want.Drift || got.DriftConfidence != want.DriftConfidence {
		t.Errorf("got drift %+v (%v), want %+v (%v)", got.Drift, got.DriftConfidence, want.Drift, want.DriftConfidence)
	}
	if !reflect.DeepEqual(got.Fingerprint, want.Fingerprint) {
		t.Errorf("got fingerprint %+v, want %+v", got.Fingerprint, want.Fingerprint)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got status %+v, want %+v", got, want)
	}
	if a, b := mustDriftHistory(t, fresh, "a"), mustDriftHistory(t, orig, "a"); !reflect.DeepEqual(a, b) {
		t.Errorf("got drift history %+v, want %+v", a, b)
	}
	if a, b := mustTrustEvents(t, fresh, "a"), mustTrustEvents(t, orig, "a"); !reflect.DeepEqual(a, b) {
		t.Errorf("got trust events %+v, want %+v", a, b)
	}

	// The next decisions are the same in both engines, including the
	// approval, a resubmission and the next drift recomputation.
	next := []Request{
		{AgentID: "a", Action: Action{ID: "n1", Type: "delete", Target: "data/x", Parameters: map[string]any{"n": 1.0}}},
		{AgentID: "a", Action: Action{ID: "n2", Type: "write", Target: "data/write", Parameters: map[string]any{"n": 0.0}}, Context: Context{Instruction: "Refund it"}},
		{AgentID: "a", Action: Action{ID: "n3", Type: "delete", Target: "data/delete", Parameters: map[string]any{"n": 1.0}}},
		{AgentID: "a", Action: Action{ID: "n4", Type: "read", Target: "data/read", Parameters: map[string]any{"n": 2.0}}},
	}
	for _, req := range next {
		clk.Advance(3 * time.Second)
		clk2.Advance(3 * time.Second)
		d1, d2 := evalReq(t, orig, req), evalReq(t, fresh, req)
		if !reflect.DeepEqual(comparableDecision(d2), comparableDecision(d1)) {
			t.Errorf("%s: got decision %+v, want %+v", req.Action.ID, comparableDecision(d2), comparableDecision(d1))
		}
		if !slices.Equal(stepNames(d1), stepNames(d2)) {
			t.Errorf("%s: got steps %v, want %v", req.Action.ID, stepNames(d2), stepNames(d1))
		}
	}
	if a, b := mustStatus(t, fresh, "a"), mustStatus(t, orig, "a"); !reflect.DeepEqual(a, b) {
		t.Errorf("after the next decisions: got status %+v, want %+v", a, b)
	}
}

// tamper rewrites one field of a snapshot document.
func tamper(t *testing.T, snap *Snapshot, f func(doc map[string]any)) []byte {
	t.Helper()
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	f(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSnapshotRefused(t *testing.T) {
	state := func(doc map[string]any) map[string]any { return doc["state"].(map[string]any) }
	cases := []struct {
		name        string
		edit        func(doc map[string]any)
		unmarshalOK bool
		errHas      string
	}{
		{"version mismatch", func(doc map[string]any) { doc["version"] = 2 }, false, "version 2"},
		{"missing version", func(doc map[string]any) { delete(doc, "version") }, false, "version 0"},
		{"trust above the maximum", func(doc map[string]any) { state(doc)["trust"] = 0.99 }, true, "trust 0.99"},
		{"trust below the minimum", func(doc map[string]any) { state(doc)["trust"] = 0.01 }, true, "trust 0.01"},
		{"negative observations", func(doc map[string]any) { state(doc)["observations"] = -1 }, true, "negative"},
		{"window hour out of range", func(doc map[string]any) {
			w := state(doc)["window"].([]any)
			w[0].(map[string]any)["hour"] = 24
		}, true, "hour 24"},
		{"unknown agent", func(doc map[string]any) { doc["agent_id"] = "ghost" }, true, "unknown agent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a"})
			allowN(t, e, clk, "a", 3)
			snap, err := e.Snapshot("a")
			if err != nil {
				t.Fatal(err)
			}
			raw := tamper(t, snap, tc.edit)
			before := mustStatus(t, e, "a")
			var back Snapshot
			err = json.Unmarshal(raw, &back)
			if tc.unmarshalOK {
				if err != nil {
					t.Fatalf("Unmarshal: %v", err)
				}
				err = e.Restore(&back)
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Fatalf("got %v, want an error containing %q", err, tc.errHas)
			}
			if after := mustStatus(t, e, "a"); !reflect.DeepEqual(after, before) {
				t.Errorf("got status %+v after a refused restore, want it unchanged", after)
			}
		})
	}
	t.Run("unknown agent is ErrUnknownAgent", func(t *testing.T) {
		e, _ := engineWith(t, Contract{AgentID: "a"})
		snap, _ := e.Snapshot("a")
		other, _ := engineWith(t, Contract{AgentID: "b"})
		if err := other.Restore(snap); !errors.Is(err, ErrUnknownAgent) {
			t.Errorf("got %v, want ErrUnknownAgent", err)
		}
		if _, err := other.Snapshot("a"); !errors.Is(err, ErrUnknownAgent) {
			t.Errorf("Snapshot: got %v, want ErrUnknownAgent", err)
		}
	})
	t.Run("empty snapshot", func(t *testing.T) {
		e, _ := engineWith(t, Contract{AgentID: "a"})
		if err := e.Restore(&Snapshot{}); err == nil {
			t.Errorf("Restore: got nil error, want one")
		}
		if err := e.Restore(nil); err == nil {
			t.Errorf("Restore(nil): got nil error, want one")
		}
		if _, err := json.Marshal(&Snapshot{}); err == nil {
			t.Errorf("Marshal: got nil error, want one")
		}
	})
}
