package governor

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on.
var (
	// ErrUnknownAgent: no contract is registered for the agent.
	ErrUnknownAgent = errors.New("governor: unknown agent")
	// ErrUndecidable: the evaluation failed (a recovered panic); the caller
	// must refuse the action.
	ErrUndecidable = errors.New("governor: cannot decide")
)

// FieldError is a configuration problem in one named field.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Msg) }
