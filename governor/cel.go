package governor

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Invariant is a compiled CEL expression over `action` that must hold. It is
// immutable and safe for concurrent use. Authority expressions, enforce
// directives and constitutional rules are all invariants.
type Invariant struct {
	Name    string
	Expr    string
	Message string
	prg     cel.Program
}

// celEnv is the one CEL environment: a single variable `action`, a map with the
// keys type, target, parameters (and source, method). Built once, never
// mutated afterwards.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("action", cel.MapType(cel.StringType, cel.DynType)))
})

// CompileInvariant parses and type-checks expr; it must yield a bool.
func CompileInvariant(name, expr, message string) (*Invariant, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("governor: cel environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("invalid CEL expression %q: %w", expr, iss.Err())
	}
	if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
		return nil, fmt.Errorf("CEL expression %q yields %s, want bool", expr, ast.OutputType())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", expr, err)
	}
	return &Invariant{Name: name, Expr: expr, Message: message, prg: prg}, nil
}

// Holds evaluates the invariant against an activation built by celInput. An
// evaluation error or a non-bool result counts as a failure (fail closed);
// the returned detail says why.
func (inv *Invariant) holds(input map[string]any) (bool, string) {
	out, _, err := inv.prg.Eval(input)
	if err != nil {
		return false, fmt.Sprintf("evaluation error: %v", err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Sprintf("result %v is not a bool", out.Value())
	}
	return b, ""
}

// celInput builds the activation for one action, shared by every expression of
// one evaluation.
func celInput(a *Action) map[string]any {
	params := a.Parameters
	if params == nil {
		params = map[string]any{}
	}
	return map[string]any{"action": map[string]any{
		"type":       a.Type,
		"target":     a.Target,
		"parameters": params,
		"source":     a.Source,
		"method":     a.Method,
	}}
}
