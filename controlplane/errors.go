package controlplane

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on (the admin API maps them to its error
// codes).
var (
	// ErrDisabled: the control plane is disabled (enable_control_plane:
	// false); nothing can be issued or expired.
	ErrDisabled = errors.New("controlplane: control plane disabled")
	// ErrNotFound: no directive has the id.
	ErrNotFound = errors.New("controlplane: not found")
	// ErrConflict: the directive is already expired.
	ErrConflict = errors.New("controlplane: conflict")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("controlplane: store closed")
	// ErrCorrupt: stored data is damaged in a way that is not a torn tail.
	ErrCorrupt = errors.New("controlplane: store corrupt")
)

// FieldError is a problem with one field of an issue request. Field is the
// JSON path of the field as the API spells it ("type", "target.drift_status",
// "parameters.invariants[0].expr", "duration_seconds", ...).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Msg) }
