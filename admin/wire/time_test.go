package wire_test

import (
	"testing"
	"time"

	"github.com/vigilhq/vigil/admin/wire"
)

func TestTime(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"utc", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000Z"},
		{"truncates to milliseconds", time.Date(2026, 1, 2, 3, 4, 5, 987654321, time.UTC), "2026-01-02T03:04:05.987Z"},
		{"converts to utc", time.Date(2026, 1, 2, 0, 30, 0, 5e6, time.FixedZone("X", 2*3600)), "2026-01-01T22:30:00.005Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wire.Time(tt.in); got != tt.want {
				t.Errorf("Time: got %s, want %s", got, tt.want)
			}
		})
	}
	if got := wire.OptionalTime(time.Time{}); got != nil {
		t.Errorf("OptionalTime(zero): got %q, want nil", *got)
	}
	if got := wire.OptionalTime(tests[0].in); got == nil || *got != tests[0].want {
		t.Errorf("OptionalTime: got %v, want %s", got, tests[0].want)
	}
}
