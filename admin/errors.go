package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// apiError is an error with its place in the envelope: the HTTP status, the
// code, a message for the caller and details (e.g. {"field": "agent_id"}).
type apiError struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
	// failed adds "success": false to the envelope (control_plane_disabled).
	failed bool
	// cause is the underlying failure of a 503 (or any answer that hides
	// one): it is logged, never sent.
	cause error
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return e.Code + ": " + e.Message + ": " + e.cause.Error()
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the hidden cause, if any.
func (e *apiError) Unwrap() error { return e.cause }

// errInvalid is a 400 invalid_request; field, when not empty, names the
// offending request field in details.field.
func errInvalid(field, format string, args ...any) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Code: wire.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
	if field != "" {
		e.Details = map[string]any{"field": field}
	}
	return e
}

func errUnauthenticated(msg string) *apiError {
	return &apiError{Status: http.StatusUnauthorized, Code: wire.CodeUnauthenticated, Message: msg}
}

func errForbidden(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusForbidden, Code: wire.CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

func errNotFound(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: wire.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

func errConflict(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Code: wire.CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// errControlPlaneDisabled is the 409 of a directive route when the control
// plane is off; its envelope carries "success": false (API.md section 6).
func errControlPlaneDisabled() *apiError {
	return &apiError{Status: http.StatusConflict, Code: wire.CodeControlPlaneDisabled, failed: true,
		Message: "the control plane is disabled (runtime.enable_control_plane: false)"}
}

func errTooLarge() *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Code: wire.CodePayloadTooLarge,
		Message: fmt.Sprintf("request body exceeds %d bytes", maxBodyBytes), Details: map[string]any{"limit_bytes": maxBodyBytes}}
}

// errUnavailable is a 503 unavailable: a required store failed. The cause
// goes to the log, never to the caller.
func errUnavailable(cause error, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Code: wire.CodeUnavailable, Message: fmt.Sprintf(format, args...), cause: cause}
}

// errInternal is the one answer to an unexpected failure: the cause goes to
// the log, never to the caller.
func errInternal() *apiError {
	return &apiError{Status: http.StatusInternalServerError, Code: wire.CodeInternal, Message: "internal error; the cause is in the server log"}
}

// toAPIError maps any error a handler returns to its envelope: an *apiError
// as it is, the governor's sentinels and field errors to their codes, an
// oversized body to 413, and everything else to 500 internal (internal is
// true then, and the caller logs err).
func toAPIError(err error) (e *apiError, internal bool) {
	var ae *apiError
	var fe *governor.FieldError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae, false
	case errors.As(err, &mbe):
		return errTooLarge(), false
	case errors.Is(err, governor.ErrUnknownAgent):
		return errNotFound("unknown agent"), false
	case errors.As(err, &fe):
		return errInvalid(fe.Field, "%s", fe.Error()), false
	}
	return errInternal(), true
}

// envelope builds the error body of e; details is never null.
func (e *apiError) envelope() wire.ErrorResponse {
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	out := wire.ErrorResponse{Error: wire.ErrorBody{Code: e.Code, Message: e.Message, Details: details}}
	if e.failed {
		out.Success = new(bool)
	}
	return out
}
