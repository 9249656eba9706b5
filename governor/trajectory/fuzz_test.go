package trajectory

import (
	"errors"
	"testing"
)

func FuzzParseStrategy(f *testing.F) {
	for _, s := range Strategies() {
		f.Add(string(s))
	}
	f.Add("GRADUATED")
	f.Add("")
	f.Fuzz(func(t *testing.T, name string) {
		s, err := ParseStrategy(name)
		switch {
		case err == nil && string(s) != name:
			t.Fatalf("ParseStrategy(%q): got %q, want the same name", name, s)
		case err != nil && !errors.Is(err, ErrUnknownStrategy):
			t.Fatalf("ParseStrategy(%q): got %v, want ErrUnknownStrategy", name, err)
		case err != nil && indexOf(Strategy(name)) >= 0:
			t.Fatalf("ParseStrategy(%q): got %v for a valid name", name, err)
		}
	})
}
