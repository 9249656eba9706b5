package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the
// nearest-rank method: the smallest value with at least p % of the values at
// or below it. It returns 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The epsilon keeps 99.9 % of 1,000 at rank 999 despite floating point.
	rank := int(math.Ceil(p/100*float64(n) - 1e-9))
	return sorted[min(max(rank, 1), n)-1]
}

// span is a median with its range, over rounds.
type span struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// summarize returns the median (the mean of the two middle values for an
// even count), minimum and maximum of xs; the zero span for none.
func summarize(xs []float64) span {
	if len(xs) == 0 {
		return span{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return span{Median: med, Min: s[0], Max: s[n-1]}
}

// schedule is the arithmetic of the open-loop generator: request i is due at
// start + i/rate, whatever happened to the requests before it.
type schedule struct {
	start time.Time
	rate  float64 // requests per second, > 0
}

// at returns when request i is due.
func (s schedule) at(i int) time.Time {
	return s.start.Add(time.Duration(math.Round(float64(i) * float64(time.Second) / s.rate)))
}

// due returns how many requests are due at t (request 0 is due at start).
func (s schedule) due(t time.Time) int {
	el := t.Sub(s.start)
	if el < 0 {
		return 0
	}
	n := int(math.Floor(el.Seconds()*s.rate)) + 1
	// at rounds to the nanosecond: settle n on the boundary, so that call
	// n-1 is due and call n is not.
	for n > 0 && s.at(n-1).After(t) {
		n--
	}
	for !s.at(n).After(t) {
		n++
	}
	return n
}

// count returns how many requests a window of d holds at the schedule's
// rate.
func (s schedule) count(d time.Duration) int {
	return int(math.Round(d.Seconds() * s.rate))
}

// micros converts a duration to microseconds, for the reports.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
