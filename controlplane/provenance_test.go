package controlplane_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/vigilhq/vigil/controlplane"
)

var (
	directiveID = regexp.MustCompile(`^dir_[0-9a-f]{16}$`)
	eventID     = regexp.MustCompile(`^evt_[0-9a-f]{16}$`)
)

func TestProvenanceEvents(t *testing.T) {
	f := newFixture(t)
	q := f.issue(t, controlplane.IssueRequest{Type: "quarantine", Operator: "alice", Reason: "suspicious refunds",
		Target: controlplane.Target{AgentIDs: []string{"a2", "a1"}}})
	tg := f.issue(t, controlplane.IssueRequest{Type: "tighten", Operator: "carol", Reason: "watch closely",
		Target: controlplane.Target{AgentIDs: []string{"a3"}}, Parameters: controlplane.Parameters{Factor: 0.5}, Duration: time.Minute})
	rel := f.issue(t, controlplane.IssueRequest{Type: "release", Operator: "dave", Reason: "reviewed",
		Target: controlplane.Target{AgentIDs: []string{"a1", "a2"}}})
	b := f.issue(t, controlplane.IssueRequest{Type: "broadcast_reminder", Operator: "alice",
		Target: controlplane.Target{Team: "payments"}, Parameters: controlplane.Parameters{Message: "hi"}})
	expiredAt := f.clk.Now()
	f.expire(t, b.ID) // by bob
	f.clk.Advance(2 * time.Minute)
	dueAt := f.clk.Now()
	if got, err := f.p.ExpireDue(t.Context()); err != nil || len(got) != 1 {
		t.Fatalf("ExpireDue: got %d, %v; want the tighten", len(got), err)
	}
	for _, id := range []string{q.ID, tg.ID, rel.ID, b.ID} {
		if !directiveID.MatchString(id) {
			t.Errorf("directive id %q does not look like dir_ and 16 hex digits", id)
		}
	}

	type want struct {
		actor, actorType, target, code, reason string
		at                                     time.Time
		details                                string // JSON
	}
	cases := []struct {
		name string
		want want
	}{
		{"issuing a quarantine", want{"alice", "operator", q.ID, controlplane.CodeDirectiveIssued, "suspicious refunds", q.IssuedAt,
			`{"resolved_agents":["a1","a2"],"type":"quarantine"}`}},
		{"issuing a tighten", want{"carol", "operator", tg.ID, controlplane.CodeDirectiveIssued, "watch closely", tg.IssuedAt,
			`{"resolved_agents":["a3"],"type":"tighten"}`}},
		{"issuing a release", want{"dave", "operator", rel.ID, controlplane.CodeDirectiveIssued, "reviewed", rel.IssuedAt,
			`{"released_from":["` + q.ID + `"],"resolved_agents":["a1","a2"],"type":"release"}`}},
		{"the release expires the quarantine", want{"dave", "operator", q.ID, controlplane.CodeDirectiveReleased, "reviewed", rel.IssuedAt,
			`{"released_agents":["a1","a2"],"released_by":"` + rel.ID + `","type":"quarantine"}`}},
		{"an operator expires a reminder", want{"bob", "operator", b.ID, controlplane.CodeDirectiveExpired, "expired by an operator", expiredAt,
			`{"resolved_agents":["a1","a3","a4"],"trigger":"operator","type":"broadcast_reminder"}`}},
		{"the tighten's duration elapses", want{"system", "system", tg.ID, controlplane.CodeDirectiveExpired, "duration elapsed", dueAt,
			`{"expires_at":"` + tg.ExpiresAt.Format(time.RFC3339Nano) + `","resolved_agents":["a3"],"trigger":"duration","type":"tighten"}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs := f.events(t, controlplane.EventFilter{ContextCode: tc.want.code, Target: tc.want.target})
			if len(evs) != 1 {
				t.Fatalf("got %d %s events for %s, want 1", len(evs), tc.want.code, tc.want.target)
			}
			e := evs[0]
			got := want{e.Actor, e.ActorType, e.Target, e.ContextCode, e.Reason, e.Timestamp, ""}
			details, _ := json.Marshal(e.Details)
			got.details = string(details)
			if got.actor != tc.want.actor || got.actorType != tc.want.actorType || got.target != tc.want.target ||
				got.code != tc.want.code || got.reason != tc.want.reason || !got.at.Equal(tc.want.at) || got.details != tc.want.details {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if !eventID.MatchString(e.ID) {
				t.Errorf("event id %q does not look like evt_ and 16 hex digits", e.ID)
			}
		})
	}
	all := f.events(t, controlplane.EventFilter{})
	if len(all) != 7 {
		t.Errorf("got %d events in all, want 7 (4 issued, 1 released, 2 expired)", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Timestamp.After(all[i-1].Timestamp) {
			t.Errorf("events are not newest first: %v before %v", all[i-1].Timestamp, all[i].Timestamp)
		}
	}
	if got := f.events(t, controlplane.EventFilter{Actor: "alice"}); len(got) != 2 {
		t.Errorf("events by alice: got %d, want 2", len(got))
	}
}
