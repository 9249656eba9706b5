package governor

import "fmt"

// Verdict is the outcome of one evaluation.
type Verdict uint8

// The five verdicts. The zero value is not a verdict, so an unset Verdict is
// never mistaken for ALLOW.
const (
	Allow Verdict = iota + 1
	Deny
	Escalate
	Modify
	Suspend
)

var verdictNames = [...]string{Allow: "ALLOW", Deny: "DENY", Escalate: "ESCALATE", Modify: "MODIFY", Suspend: "SUSPEND"}

// String returns the wire name of v: ALLOW, DENY, ESCALATE, MODIFY or SUSPEND.
func (v Verdict) String() string {
	if v >= Allow && v <= Suspend {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// MarshalText writes the wire name.
func (v Verdict) MarshalText() ([]byte, error) {
	if v < Allow || v > Suspend {
		return nil, fmt.Errorf("governor: invalid verdict %d", uint8(v))
	}
	return []byte(verdictNames[v]), nil
}

// UnmarshalText reads a wire name (upper case, exactly).
func (v *Verdict) UnmarshalText(b []byte) error {
	p, err := ParseVerdict(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// ParseVerdict reads a wire name such as "DENY".
func ParseVerdict(s string) (Verdict, error) {
	for i := Allow; i <= Suspend; i++ {
		if verdictNames[i] == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("governor: unknown verdict %q (want ALLOW, DENY, ESCALATE, MODIFY or SUSPEND)", s)
}
