package admin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// listAgents answers GET /v1/agents: a summary of every agent, by id.
func (s *Server) listAgents(c *gin.Context) error {
	ids := slices.Sorted(slices.Values(s.gov.Agents()))
	out := wire.AgentList{Agents: make([]wire.AgentSummary, 0, len(ids))}
	for _, id := range ids {
		st, err := s.gov.Status(id)
		if errors.Is(err, governor.ErrUnknownAgent) {
			continue // removed since Agents was called
		}
		if err != nil {
			return fmt.Errorf("status of agent %q: %w", id, err)
		}
		out.Agents = append(out.Agents, wire.NewAgentSummary(st))
	}
	return writeJSON(c, http.StatusOK, out)
}

// getAgent answers GET /v1/agents/{agent_id}.
func (s *Server) getAgent(c *gin.Context) error {
	return s.writeAgent(c, c.Param("agent_id"))
}

// putAgent answers PUT /v1/agents/{agent_id}: the body replaces the agent's
// contract (creating the agent when new); the answer is the agent's view.
func (s *Server) putAgent(c *gin.Context) error {
	id := c.Param("agent_id")
	if strings.TrimSpace(id) == "" {
		return errInvalid("agent_id", "agent id must not be blank")
	}
	var body wire.Contract
	if err := decodeBody(c.Request, &body); err != nil {
		return err
	}
	if err := s.gov.SetContract(body.ToGovernor(id)); err != nil {
		var fe *governor.FieldError
		if errors.As(err, &fe) {
			return errInvalid(fe.Field, "%s", fe.Error())
		}
		return fmt.Errorf("set contract of agent %q: %w", id, err)
	}
	return s.writeAgent(c, id)
}

func (s *Server) writeAgent(c *gin.Context, id string) error {
	st, err := s.gov.Status(id)
	if errors.Is(err, governor.ErrUnknownAgent) {
		return errNotFound("no agent %q", id)
	}
	if err != nil {
		return fmt.Errorf("status of agent %q: %w", id, err)
	}
	return writeJSON(c, http.StatusOK, wire.NewAgent(st))
}
