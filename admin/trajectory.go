package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// The trajectory routes (API.md section 10) read an agent's drift history
// and effective thresholds from the governor and analyze them with
// Options.Trajectory: GET /v1/trajectory/{agent_id} (trajectory,
// recommendation, policy), GET /v1/trajectory/{agent_id}/history,
// GET /v1/trajectory/fleet (trajectory_fleet.go) and
// POST /v1/trajectory/simulate (a what-if: nothing is applied). The
// per-agent route always computes the agent's current policy (optimizing
// when the cache has none); the fleet view answers within a time budget
// with the policies the cache holds, each labelled current, stale or
// pending, and refreshes the others in the background. With the optimizer
// off every route still answers, without costs, policies or comparisons,
// and says so (optimizer_enabled false and a note). Gin routes the static
// /v1/trajectory/fleet before the parameter, so GET /v1/trajectory/fleet
// never names an agent called "fleet" (its history route still does).

// InterventionLog lists an agent's past interventions (Options.Interventions):
// the past markers of GET /v1/trajectory/{agent_id} and the interventions
// of its history.
type InterventionLog interface {
	// Interventions returns the agent's past interventions in any order
	// (the API sorts them oldest first); an agent without any has none,
	// which is not an error. An error answers 503 unavailable, its cause
	// logged.
	Interventions(ctx context.Context, agentID string) ([]trajectory.Past, error)
}

// maxSimulateHorizon is the largest horizon of POST /v1/trajectory/simulate.
const maxSimulateHorizon = 1000

// msgInterventionsUnavailable is the 503 message of an intervention log
// failure.
const msgInterventionsUnavailable = "the intervention log is unavailable; the cause is in the server log"

// getTrajectory answers GET /v1/trajectory/{agent_id}.
func (s *Server) getTrajectory(c *gin.Context) error {
	id := c.Param("agent_id")
	thr, history, err := s.driftOf(id)
	if err != nil {
		return err
	}
	past, err := s.pastOf(c.Request.Context(), id)
	if err != nil {
		return err
	}
	a := s.analyzer.Analyze(id, history, thr, past)
	return writeJSON(c, http.StatusOK, wire.NewTrajectory(a, s.analyzer.Optimizer()))
}

// trajectoryHistory answers GET /v1/trajectory/{agent_id}/history: the
// drift recomputations, the projection and the past interventions. It
// needs no policy, so it never runs the optimizer.
func (s *Server) trajectoryHistory(c *gin.Context) error {
	id := c.Param("agent_id")
	thr, history, err := s.driftOf(id)
	if err != nil {
		return err
	}
	past, err := s.pastOf(c.Request.Context(), id)
	if err != nil {
		return err
	}
	t := trajectory.Project(history, thr, nil, s.analyzer.Config())
	return writeJSON(c, http.StatusOK, wire.NewTrajectoryHistory(id, history, t, past))
}

// simulateTrajectory answers POST /v1/trajectory/simulate: one strategy run
// over the horizon from the agent's current drift. Nothing is applied.
func (s *Server) simulateTrajectory(c *gin.Context) error {
	var req wire.SimulateRequest
	if err := decodeBody(c.Request, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.AgentID) == "" {
		return errInvalid("agent_id", "agent_id is required")
	}
	strategy, err := trajectory.ParseStrategy(req.Strategy)
	if err != nil {
		if req.Strategy == "" {
			return errInvalid("strategy", "strategy is required (want %s)", strategyNames())
		}
		return errInvalid("strategy", "unknown strategy %q (want %s)", req.Strategy, strategyNames())
	}
	if req.Horizon == nil {
		return errInvalid("horizon", "horizon is required: an integer from 1 to %d", maxSimulateHorizon)
	}
	if h := *req.Horizon; h < 1 || h > maxSimulateHorizon {
		return errInvalid("horizon", "horizon must be an integer from 1 to %d, got %d", maxSimulateHorizon, h)
	}
	thr, history, err := s.driftOf(req.AgentID)
	if err != nil {
		return err
	}
	cfg := s.analyzer.Config()
	t := trajectory.Project(history, thr, nil, cfg)
	sim := trajectory.Simulate(t, strategy, *req.Horizon, cfg)
	return writeJSON(c, http.StatusOK, wire.NewSimulation(req.AgentID, sim, s.analyzer.Optimizer()))
}

// driftOf returns the agent's effective drift thresholds and drift history;
// an unknown agent is 404.
func (s *Server) driftOf(id string) (governor.Thresholds, []governor.DriftPoint, error) {
	st, err := s.gov.Status(id)
	if errors.Is(err, governor.ErrUnknownAgent) {
		return governor.Thresholds{}, nil, errNotFound("no agent %q", id)
	}
	if err != nil {
		return governor.Thresholds{}, nil, fmt.Errorf("status of agent %q: %w", id, err)
	}
	history, err := s.gov.DriftHistory(id)
	if errors.Is(err, governor.ErrUnknownAgent) {
		return governor.Thresholds{}, nil, errNotFound("no agent %q", id)
	}
	if err != nil {
		return governor.Thresholds{}, nil, fmt.Errorf("drift history of agent %q: %w", id, err)
	}
	return st.Thresholds, history, nil
}

// pastOf returns the agent's past interventions (none without a log).
func (s *Server) pastOf(ctx context.Context, id string) ([]trajectory.Past, error) {
	if s.interventions == nil {
		return nil, nil
	}
	past, err := s.interventions.Interventions(ctx, id)
	if err != nil {
		return nil, errUnavailable(fmt.Errorf("interventions of agent %q: %w", id, err), msgInterventionsUnavailable)
	}
	return past, nil
}

// strategyNames lists the strategies for a message: "a, b, c, d or e".
func strategyNames() string {
	all := trajectory.Strategies()
	names := make([]string, len(all))
	for i, st := range all {
		names[i] = string(st)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
