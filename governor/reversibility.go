package governor

import (
	"fmt"
	"strings"
)

// Reversibility is how far an action's effect can be undone.
type Reversibility uint8

// Reversibility levels. The zero value means "not assessed".
const (
	Reversible Reversibility = iota + 1
	Compensable
	Irreversible
)

var reversibilityNames = [...]string{Reversible: "reversible", Compensable: "compensable", Irreversible: "irreversible"}

// String returns the wire name: reversible, compensable or irreversible.
func (r Reversibility) String() string {
	if r >= Reversible && r <= Irreversible {
		return reversibilityNames[r]
	}
	return ""
}

// MarshalText writes the wire name.
func (r Reversibility) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// ParseReversibility reads a wire name; the empty string is the zero value.
func ParseReversibility(s string) (Reversibility, error) {
	if s == "" {
		return 0, nil
	}
	for i := Reversible; i <= Irreversible; i++ {
		if reversibilityNames[i] == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown reversibility %q (want reversible, compensable or irreversible)", s)
}

var (
	irreversibleWords = []string{"delete", "drop", "destroy", "transfer", "pay", "refund", "charge", "deploy", "publish", "send", "broadcast"}
	compensableWords  = []string{"create", "update", "write", "modify"}
	reversibleWords   = []string{"read", "get", "list", "query", "search", "fetch"}
)

// assessReversibility follows GOVERNOR.md section 7: the route rule's level
// when given, else by words in the type, else by HTTP method. A type that
// matches no word is compensable: the careful middle (documented).
func assessReversibility(a *Action) (Reversibility, string) {
	if a.Reversibility != 0 {
		return a.Reversibility, "declared by the route rule"
	}
	t := strings.ToLower(a.Type)
	if w := containsAny(t, irreversibleWords); w != "" {
		return Irreversible, fmt.Sprintf("type contains %q", w)
	}
	if w := containsAny(t, compensableWords); w != "" {
		return Compensable, fmt.Sprintf("type contains %q", w)
	}
	if w := containsAny(t, reversibleWords); w != "" {
		return Reversible, fmt.Sprintf("type contains %q", w)
	}
	if m := strings.ToUpper(a.Method); m == "GET" || m == "HEAD" {
		return Reversible, "method " + m
	}
	return Compensable, "no rule matched the type; assumed compensable"
}

// containsAny returns the first word of words that s contains, or "".
func containsAny(s string, words []string) string {
	for _, w := range words {
		if strings.Contains(s, w) {
			return w
		}
	}
	return ""
}
