package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
)

// Limits of GET /v1/provenance?limit=: larger values are clamped to the
// maximum; zero, negative and non-integer values are 400.
const (
	defaultProvenanceLimit = 100
	maxProvenanceLimit     = 1000
)

// maxDurationSeconds is the longest duration_seconds a directive may have
// (what a time.Duration holds, about 292 years).
const maxDurationSeconds = float64(math.MaxInt64 / int64(time.Second))

// msgControlUnavailable is the 503 message of a control plane store failure.
const msgControlUnavailable = "the control plane store is unavailable; the cause is in the server log"

// issueDirective answers POST /v1/control/directives: the directive is
// validated, its target resolved, and it is in force for the next
// evaluation of each bound agent when the 201 answer goes out. The operator
// is the key's principal; a body "operator" that differs is 403 unless the
// key is an admin's, which may act for another operator.
func (s *Server) issueDirective(c *gin.Context) error {
	if s.control == nil {
		return errControlPlaneDisabled()
	}
	var req wire.DirectiveRequest
	if err := decodeBody(c.Request, &req); err != nil {
		return err
	}
	operator, err := operatorOf(c, req.Operator)
	if err != nil {
		return err
	}
	ir, err := issueRequest(&req, operator)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	d, err := s.control.Issue(ctx, ir)
	if err != nil && d.ID == "" {
		return controlError(err, "")
	}
	if err != nil {
		// The directive is saved and in force; only its provenance event
		// failed. Answering an error would invite a duplicate.
		s.log.Error("admin: directive issued but its provenance event was not recorded",
			slog.String("directive_id", d.ID), slog.String("error", err.Error()))
	}
	return writeJSON(c, http.StatusCreated, wire.DirectiveResult{Success: true, Directive: wire.NewDirective(d)})
}

// listDirectives answers GET /v1/control/directives: the active directives,
// oldest first ([] without a control plane).
func (s *Server) listDirectives(c *gin.Context) error {
	if s.control == nil {
		return writeJSON(c, http.StatusOK, wire.NewDirectiveList(nil))
	}
	ds, err := s.control.List(c.Request.Context())
	if err != nil {
		return controlError(err, "")
	}
	return writeJSON(c, http.StatusOK, wire.NewDirectiveList(ds))
}

// getDirective answers GET /v1/control/directives/{directive_id}: one
// directive, active or expired.
func (s *Server) getDirective(c *gin.Context) error {
	id := c.Param("directive_id")
	if s.control == nil {
		return errNotFound("no directive %s (the control plane is disabled)", id)
	}
	d, err := s.control.Get(c.Request.Context(), id)
	if err != nil {
		return controlError(err, id)
	}
	return writeJSON(c, http.StatusOK, wire.NewDirective(d))
}

// expireDirective answers DELETE /v1/control/directives/{directive_id}: the
// directive is expired now, by the key's principal, and its effects are
// undone before the answer goes out. The directives whose duration has
// elapsed are expired first (API.md: expiry is checked on DELETE), so a
// directive that has just run out is 409 conflict, like any expired one.
func (s *Server) expireDirective(c *gin.Context) error {
	if s.control == nil {
		return errControlPlaneDisabled()
	}
	id := c.Param("directive_id")
	operator, err := operatorOf(c, "")
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	if _, err := s.control.ExpireDue(ctx); err != nil {
		return controlError(err, "")
	}
	d, err := s.control.Expire(ctx, id, operator)
	if errors.Is(err, controlplane.ErrConflict) {
		if old, gerr := s.control.Get(ctx, id); gerr == nil {
			return errConflict("directive %s already expired at %s", id, wire.Time(old.ExpiredAt))
		}
	}
	if err != nil && d.ID == "" {
		return controlError(err, id)
	}
	if err != nil {
		s.log.Error("admin: directive expired but its provenance event was not recorded",
			slog.String("directive_id", d.ID), slog.String("error", err.Error()))
	}
	return writeJSON(c, http.StatusOK, wire.DirectiveResult{Success: true, Directive: wire.NewDirective(d)})
}

// listProvenance answers GET
// /v1/provenance?context_code=&actor=&target=&limit=: the events the
// filters select (each matched exactly; empty or absent matches all),
// newest first.
func (s *Server) listProvenance(c *gin.Context) error {
	limit, err := queryCount(c, "limit", defaultProvenanceLimit, maxProvenanceLimit)
	if err != nil {
		return err
	}
	if s.control == nil {
		return writeJSON(c, http.StatusOK, wire.NewProvenanceList(nil))
	}
	events, err := s.control.Events(c.Request.Context(), controlplane.EventFilter{
		ContextCode: c.Query("context_code"), Actor: c.Query("actor"), Target: c.Query("target"), Limit: limit,
	})
	if err != nil {
		return errUnavailable(err, msgControlUnavailable)
	}
	return writeJSON(c, http.StatusOK, wire.NewProvenanceList(events))
}

// operatorOf returns the operator a request acts as: the key's principal.
// A claimed operator that differs is refused unless the key is an admin's,
// in which case the claim is used.
func operatorOf(c *gin.Context, claimed string) (string, error) {
	who, ok := principalFrom(c.Request.Context())
	if !ok {
		return "", errUnauthenticated("no authenticated principal")
	}
	if claimed == "" || claimed == who.Name {
		return who.Name, nil
	}
	if who.Role != RoleAdmin {
		e := errForbidden("operator %q is not the key's principal %q; only an admin key may act for another operator", claimed, who.Name)
		e.Details = map[string]any{"field": "operator"}
		return "", e
	}
	if strings.TrimSpace(claimed) == "" {
		return "", errInvalid("operator", "operator must not be blank")
	}
	return claimed, nil
}

// issueRequest checks what the control plane cannot tell from its request
// (a duration_seconds of 0, an explicit factor of 0) and converts req.
func issueRequest(req *wire.DirectiveRequest, operator string) (controlplane.IssueRequest, error) {
	duration, err := directiveDuration(req.DurationSeconds)
	if err != nil {
		return controlplane.IssueRequest{}, err
	}
	if p := req.Parameters; p != nil && p.Factor != nil && *p.Factor == 0 {
		return controlplane.IssueRequest{}, errInvalid("parameters.factor", "parameters.factor must be positive (0 < factor; below 1 is stricter), got 0")
	}
	return req.ToControlPlane(operator, duration), nil
}

// directiveDuration reads duration_seconds: nil is no duration; otherwise
// a number of seconds from 0.001 (the precision of timestamps) to about 292
// years.
func directiveDuration(secs *float64) (time.Duration, error) {
	if secs == nil {
		return 0, nil
	}
	switch s := *secs; {
	case s < 0:
		return 0, errInvalid("duration_seconds", "duration_seconds must not be negative, got %v", s)
	case s < 0.001:
		return 0, errInvalid("duration_seconds", "duration_seconds must be at least 0.001 (null or absent for no duration), got %v", s)
	case s > maxDurationSeconds:
		return 0, errInvalid("duration_seconds", "duration_seconds must be at most %.0f, got %v", maxDurationSeconds, s)
	default:
		return time.Duration(math.Round(s * float64(time.Second))), nil
	}
}

// controlError maps an error of the control plane: a field error is 400
// naming the field, ErrDisabled 409 control_plane_disabled, ErrNotFound 404
// (id is the directive asked for), ErrConflict 409 conflict, anything else
// a store failure (503, the cause logged).
func controlError(err error, id string) error {
	var fe *controlplane.FieldError
	switch {
	case errors.As(err, &fe):
		return errInvalid(fe.Field, "%s", fe.Error())
	case errors.Is(err, controlplane.ErrDisabled):
		return errControlPlaneDisabled()
	case errors.Is(err, controlplane.ErrNotFound):
		return errNotFound("no directive %s", id)
	case errors.Is(err, controlplane.ErrConflict):
		return errConflict("%s", strings.TrimPrefix(err.Error(), controlplane.ErrConflict.Error()+": "))
	}
	return errUnavailable(fmt.Errorf("control plane: %w", err), msgControlUnavailable)
}
