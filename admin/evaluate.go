package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// actionSource is the source of every action evaluated through the API.
const actionSource = "api"

// origins are the accepted values of context.origin.
var origins = []string{"user_request", "agent_initiated", "escalation_received"}

// evaluate answers POST /v1/evaluate: the action is decided, changes the
// agent's state and, with a ledger, is recorded before the verdict is
// returned ("ledger" names the entry; null without a ledger). If the entry
// cannot be written the answer is 503 and no verdict is returned: a decision
// that is not recorded is not acted on (fail closed). With a control plane,
// each evaluation counts towards its periodic expiry check. With an
// override queue, an ESCALATE gets a pending approval, named by
// "approval_id" in the answer (API.md section 9).
func (s *Server) evaluate(c *gin.Context) error {
	return s.decide(c, false)
}

// playgroundEvaluate answers POST /v1/playground/evaluate: a dry run that
// changes nothing. It is 404 unless the playground is enabled.
func (s *Server) playgroundEvaluate(c *gin.Context) error {
	if !s.playground {
		return errNotFound("the playground is disabled; start vigil serve with --playground")
	}
	return s.decide(c, true)
}

func (s *Server) decide(c *gin.Context, dryRun bool) error {
	var req wire.EvaluateRequest
	if err := decodeBody(c.Request, &req); err != nil {
		return err
	}
	if err := validateEvaluate(&req); err != nil {
		return err
	}
	greq := req.ToGovernor(actionSource)
	greq.DryRun = dryRun
	d, err := s.gov.Evaluate(greq)
	if errors.Is(err, governor.ErrUnknownAgent) {
		return errNotFound("no agent %q", req.AgentID)
	}
	if err != nil {
		return fmt.Errorf("evaluate agent %q: %w", req.AgentID, err)
	}
	var ref *wire.LedgerRef
	if !dryRun && s.ledger != nil {
		// The state has changed: record the decision even if the caller
		// goes away meanwhile.
		rec, err := s.ledger.Append(context.WithoutCancel(c.Request.Context()), d)
		if err != nil {
			return errUnavailable(err, "the decision could not be recorded; nothing was done")
		}
		ref = wire.NewLedgerRef(rec)
	}
	if !dryRun && s.control != nil {
		// Every Config.ExpiryEvery-th evaluation checks directive expiry.
		s.control.ObserveEvaluation()
	}
	out := wire.NewEvaluation(d, ref)
	if !dryRun {
		// An ESCALATE is held for a human: it gets a pending approval.
		out.ApprovalID = s.requestApproval(context.WithoutCancel(c.Request.Context()), d, greq.Action, ref)
	}
	return writeJSON(c, http.StatusOK, out)
}

// validateEvaluate checks what the decoder cannot: required fields, ranges
// and enumerations.
func validateEvaluate(r *wire.EvaluateRequest) error {
	if strings.TrimSpace(r.AgentID) == "" {
		return errInvalid("agent_id", "agent_id is required")
	}
	if r.Action == nil {
		return errInvalid("action", "action is required")
	}
	if strings.TrimSpace(r.Action.Type) == "" {
		return errInvalid("action.type", "action.type is required")
	}
	if ctx := r.Context; ctx != nil {
		if ctx.Origin != "" && !slices.Contains(origins, ctx.Origin) {
			return errInvalid("context.origin", "unknown origin %q (want %s)", ctx.Origin, strings.Join(origins, ", "))
		}
		if ctx.DelegationDepth < 0 {
			return errInvalid("context.delegation_depth", "context.delegation_depth must not be negative")
		}
		if ctx.ChildAgents < 0 {
			return errInvalid("context.child_agents", "context.child_agents must not be negative")
		}
	}
	return nil
}
