package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// Intervention modes (optimizer.interventions).
const (
	interventionsOff       = "off"
	interventionsRecommend = "recommend"
	interventionsAuto      = "auto"
)

// Provenance of the optimizer's interventions (actor "optimizer", target
// the agent; details: type, step, applied, strategy, risk_level and, when
// applied, directive_id).
const (
	codeInterventionPlanned = "OPTIMIZER.INTERVENTION_PLANNED"
	codeInterventionApplied = "OPTIMIZER.INTERVENTION_APPLIED"
	actorOptimizer          = "optimizer"
)

// autoDirectiveDuration bounds what an auto intervention imposes; an
// operator can end it sooner (DELETE) or release/relax it.
const autoDirectiveDuration = 30 * time.Minute

// advisoryMessage is the reminder an auto advisory broadcasts.
const advisoryMessage = "Your recent actions are drifting from your usual behaviour: stay within the task you were given."

// interventions watches every agent's recommendation and, when it changes
// to advisory, throttle or escalate, records a planned intervention
// (recommend) or applies it through the control plane (auto). It is also
// the trajectory routes' log of past interventions.
type interventions struct {
	mode     string
	engine   *governor.Engine
	analyzer *trajectory.Analyzer
	plane    *controlplane.Plane // nil: control plane disabled (nothing recorded or applied)
	events   controlplane.Store  // the plane's store
	log      *slog.Logger

	mu   sync.Mutex
	last map[string]trajectory.Intervention // per agent: the last recommendation seen
}

// Interventions returns the agent's optimizer interventions, planned and
// applied, oldest first (admin.InterventionLog).
func (iv *interventions) Interventions(ctx context.Context, agentID string) ([]trajectory.Past, error) {
	if iv.plane == nil {
		return nil, nil
	}
	evs, err := iv.plane.Events(ctx, controlplane.EventFilter{Actor: actorOptimizer, Target: agentID})
	if err != nil {
		return nil, err
	}
	out := make([]trajectory.Past, 0, len(evs))
	for _, e := range evs {
		if e.ContextCode != codeInterventionPlanned && e.ContextCode != codeInterventionApplied {
			continue
		}
		typ, _ := e.Details["type"].(string)
		out = append(out, trajectory.Past{Step: intOf(e.Details["step"]), Type: trajectory.Intervention(typ),
			Reason: e.Reason, Applied: e.ContextCode == codeInterventionApplied, Time: e.Timestamp})
	}
	slices.SortStableFunc(out, func(a, b trajectory.Past) int { return a.Time.Compare(b.Time) })
	return out, nil
}

// intOf reads a JSON number (float64 after a round trip, int before).
func intOf(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

// run checks every agent at once (which warms the analyzer's cache for the
// fleet view) and then each interval, until ctx ends.
func (iv *interventions) run(ctx context.Context, every time.Duration) {
	iv.check(ctx)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			iv.check(ctx)
		}
	}
}

// check recomputes every agent's recommendation (which also keeps the
// analyzer's policy cache warm for the fleet view) and acts on the changes
// unless interventions are off.
func (iv *interventions) check(ctx context.Context) {
	for _, id := range iv.engine.Agents() {
		if ctx.Err() != nil {
			return
		}
		if err := iv.checkAgent(ctx, id); err != nil && !errors.Is(err, governor.ErrUnknownAgent) {
			iv.log.Warn("optimizer: intervention check failed", "agent_id", id, "err", err)
		}
	}
}

func (iv *interventions) checkAgent(ctx context.Context, id string) error {
	hist, err := iv.engine.DriftHistory(id)
	if err != nil {
		return err
	}
	st, err := iv.engine.Status(id)
	if err != nil {
		return err
	}
	// Past interventions only place markers; the recommendation does not
	// depend on them, so the log is read only when there is something to
	// do.
	an := iv.analyzer.Analyze(id, hist, st.Thresholds, nil)
	rec := an.Recommendation.Intervention
	iv.mu.Lock()
	prev, seen := iv.last[id]
	iv.last[id] = rec
	iv.mu.Unlock()
	if rec == trajectory.None || (seen && prev == rec) || iv.mode == interventionsOff || iv.plane == nil {
		return nil
	}
	past, err := iv.Interventions(ctx, id)
	if err != nil {
		return err
	}
	// Another sidecar on the same Redis may have acted already.
	if n := len(past); n > 0 && past[n-1].Type == rec && time.Since(past[n-1].Time) < autoDirectiveDuration {
		return nil
	}
	return iv.act(ctx, id, rec, st, an)
}

// act records (recommend) or applies (auto) one intervention.
func (iv *interventions) act(ctx context.Context, id string, rec trajectory.Intervention, st governor.AgentStatus, an trajectory.Analysis) error {
	strategy := ""
	if an.Policy != nil {
		strategy = string(an.Policy.Strategy)
	}
	reason := fmt.Sprintf("%s recommended: risk %s, overall drift %.3f rising %.4f per action", rec,
		an.Trajectory.Risk, an.Trajectory.Current.Overall, an.Trajectory.Velocity.Overall)
	if strategy != "" {
		reason += " (strategy " + strategy + ")"
	}
	details := map[string]any{"type": string(rec), "step": st.Observations, "strategy": strategy,
		"risk_level": string(an.Trajectory.Risk), "source": an.Recommendation.Source}
	code := codeInterventionPlanned
	if iv.mode == interventionsAuto {
		d, err := iv.apply(ctx, id, rec, reason)
		if err != nil {
			return fmt.Errorf("apply %s: %w", rec, err)
		}
		details["directive_id"] = d.ID
		code = codeInterventionApplied
	}
	details["applied"] = code == codeInterventionApplied
	iv.log.Info("optimizer: intervention", "agent_id", id, "type", string(rec), "applied", details["applied"], "reason", reason)
	return iv.events.AppendEvent(ctx, controlplane.NewEvent(actorOptimizer, controlplane.ActorTypeSystem, id, code, reason, details))
}

// apply issues the directive of an auto intervention, as "optimizer".
func (iv *interventions) apply(ctx context.Context, id string, rec trajectory.Intervention, reason string) (controlplane.Directive, error) {
	req := controlplane.IssueRequest{Operator: actorOptimizer, Reason: reason, System: true,
		Target: controlplane.Target{AgentIDs: []string{id}}, Duration: autoDirectiveDuration}
	switch rec {
	case trajectory.Advisory:
		req.Type, req.Parameters.Message = string(controlplane.BroadcastReminder), advisoryMessage
	case trajectory.Throttle:
		req.Type, req.Parameters.Factor = string(controlplane.Throttle), 0.5
	case trajectory.Escalate:
		req.Type, req.Duration = string(controlplane.Quarantine), 0 // until an operator releases it
	default:
		return controlplane.Directive{}, fmt.Errorf("no directive for %q", rec)
	}
	return iv.plane.Issue(ctx, req)
}

// parseInterventions returns the configured mode ("" means recommend).
func parseInterventions(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return interventionsRecommend
	}
	return s
}

// withInterventions runs the intervention check every interval until ctx
// ends, and returns next preceded by the end of that loop (so that serve's
// stop of the control plane, before the stores close, stops it too).
func withInterventions(ctx context.Context, iv *interventions, every time.Duration, next func()) func() {
	return inBackground(ctx, func(ctx context.Context) { iv.run(ctx, every) }, nil, next)
}
