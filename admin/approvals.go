package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// Limits of GET /v1/approvals?limit=: larger values are clamped to the
// maximum; zero, negative and non-integer values are 400.
const (
	defaultApprovalLimit = 50
	maxApprovalLimit     = 1000
)

// listApprovals answers GET /v1/approvals?status=S&limit=N: the approvals
// with the status (every status when absent), newest first ([] without an
// override queue).
func (s *Server) listApprovals(c *gin.Context) error {
	status, given := c.GetQuery("status")
	if given && !controlplane.ValidApprovalStatus(status) {
		return errInvalid("status", "unknown status %q (want pending, approved, denied or expired)", status)
	}
	limit, err := queryCount(c, "limit", defaultApprovalLimit, maxApprovalLimit)
	if err != nil {
		return err
	}
	if s.approvals == nil {
		return writeJSON(c, http.StatusOK, wire.NewApprovalList(nil))
	}
	as, err := s.approvals.List(c.Request.Context(), status, limit)
	if err != nil {
		return approvalError(err, "")
	}
	return writeJSON(c, http.StatusOK, wire.NewApprovalList(as))
}

// approve answers POST /v1/approvals/{approval_id}/approve.
func (s *Server) approve(c *gin.Context) error { return s.decideApproval(c, true) }

// deny answers POST /v1/approvals/{approval_id}/deny.
func (s *Server) deny(c *gin.Context) error { return s.decideApproval(c, false) }

// decideApproval records the decision of the key's principal (or, for an
// admin key, of the body's "operator") on a pending approval, with the
// body's optional reason, and answers the decided approval. An approval is
// granted to the governor before the answer goes out, so the identical
// action evaluated next passes (once). Unknown: 404; decided or expired:
// 409 conflict.
func (s *Server) decideApproval(c *gin.Context, approve bool) error {
	if s.approvals == nil {
		return errControlPlaneDisabled()
	}
	id := c.Param("approval_id")
	var req wire.ApprovalDecision
	if err := decodeOptionalBody(c.Request, &req); err != nil {
		return err
	}
	operator, err := operatorOf(c, req.Operator)
	if err != nil {
		return err
	}
	// A decision is a state change: it completes even if the caller goes
	// away meanwhile (each store call is bounded by the store's timeout).
	a, err := s.approvals.Decide(context.WithoutCancel(c.Request.Context()), id, approve, operator, req.Reason)
	if err != nil && a.ID == "" {
		return approvalError(err, id)
	}
	if err != nil {
		// Decided and stored; only its provenance event failed.
		s.log.Error("admin: approval decided but its provenance event was not recorded",
			slog.String("approval_id", a.ID), slog.String("error", err.Error()))
	}
	return writeJSON(c, http.StatusOK, wire.NewApproval(a))
}

// requestApproval creates the pending approval of an ESCALATE decision of
// POST /v1/evaluate and returns its id; "" (the failure logged) when there
// is no override queue or it failed: the decision is recorded and stands,
// and answering an error would invite a second evaluation.
func (s *Server) requestApproval(ctx context.Context, d *governor.Decision, act governor.Action, ref *wire.LedgerRef) string {
	if s.approvals == nil || d.Verdict != governor.Escalate {
		return ""
	}
	args := controlplane.RequestArgs{AgentID: d.AgentID, Action: act, Reason: d.Reasoning}
	if ref != nil && !ref.Spooled {
		args.Ledger = &controlplane.LedgerRef{AgentID: ref.AgentID, Sequence: ref.Sequence}
	}
	a, err := s.approvals.Request(ctx, args)
	if err != nil {
		s.log.Error("admin: escalated decision recorded but no approval could be requested",
			slog.String("agent_id", d.AgentID), slog.String("action_id", d.ActionID), slog.String("error", err.Error()))
		return ""
	}
	return a.ID
}

// decodeOptionalBody is decodeBody for a body that may be absent or empty.
func decodeOptionalBody(r *http.Request, dst any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return errTooLarge()
		}
		return errInvalid("", "cannot read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return decodeBody(r, dst)
}

// approvalError maps an error of the override queue: a field error is 400
// naming the field, ErrNotFound 404 (id is the approval asked for),
// ErrConflict 409 conflict, anything else a store failure (503, the cause
// logged).
func approvalError(err error, id string) error {
	var fe *controlplane.FieldError
	switch {
	case errors.As(err, &fe):
		return errInvalid(fe.Field, "%s", fe.Error())
	case errors.Is(err, controlplane.ErrNotFound):
		return errNotFound("no approval %s", id)
	case errors.Is(err, controlplane.ErrConflict):
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, controlplane.ErrConflict.Error()+": "); ok {
			msg = after
		}
		return errConflict("%s", msg)
	}
	return errUnavailable(fmt.Errorf("approvals: %w", err), msgControlUnavailable)
}
