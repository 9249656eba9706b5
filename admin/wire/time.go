package wire

import "time"

// TimeFormat is the layout of every timestamp on the wire: RFC 3339 in UTC
// with exactly three fractional digits.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time formats t in UTC with millisecond precision (TimeFormat).
func Time(t time.Time) string { return t.UTC().Format(TimeFormat) }

// OptionalTime is Time for a nullable field: nil when t is the zero time.
func OptionalTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := Time(t)
	return &s
}
