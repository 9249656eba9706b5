package wire

// Error codes of the envelope (API.md section 2). Clients branch on these.
const (
	CodeInvalidRequest       = "invalid_request"
	CodeUnauthenticated      = "unauthenticated"
	CodeForbidden            = "forbidden"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeConflict             = "conflict"
	CodeControlPlaneDisabled = "control_plane_disabled"
	CodePayloadTooLarge      = "payload_too_large"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal"
)

// ErrorResponse is the body of every error response, whatever the status:
// {"error": {"code", "message", "details"}}. Success is present only in
// control_plane_disabled answers, as false (API.md section 6: the routes
// that answer {"success": true, ...} say {"success": false, "error": ...}
// when the control plane is off).
type ErrorResponse struct {
	Success *bool     `json:"success,omitempty"`
	Error   ErrorBody `json:"error"`
}

// ErrorBody is the content of the error envelope. Details is always an
// object ({} when empty); "field" names the offending request field when
// there is one.
type ErrorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}
