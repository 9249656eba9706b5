package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ten := make([]time.Duration, 10)
	for i := range ten {
		ten[i] = time.Duration(i+1) * time.Millisecond // 1 .. 10 ms
	}
	thousand := make([]time.Duration, 1000)
	for i := range thousand {
		thousand[i] = time.Duration(i + 1) // 1 .. 1000 ns
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", []time.Duration{7}, 99, 7},
		{"p50 of ten is the 5th", ten, 50, 5 * time.Millisecond},
		{"p90 of ten is the 9th", ten, 90, 9 * time.Millisecond},
		{"p99 of ten is the max", ten, 99, 10 * time.Millisecond},
		{"p100 is the max", ten, 100, 10 * time.Millisecond},
		{"tiny p is the min", ten, 0.01, time.Millisecond},
		{"p99 of 1000", thousand, 99, 990},
		{"p99.9 of 1000", thousand, 99.9, 999},
		{"p50 of 1000", thousand, 50, 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	cases := []struct {
		name string
		xs   []float64
		want span
	}{
		{"none", nil, span{}},
		{"one", []float64{3}, span{3, 3, 3}},
		{"odd count, unsorted", []float64{5, 1, 4, 2, 3}, span{3, 1, 5}},
		{"even count: mean of the middle two", []float64{10, 40, 20, 30}, span{25, 10, 40}},
		{"negative values", []float64{-0.2, 0.1, -0.5}, span{-0.2, -0.5, 0.1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.xs...)
			if got := summarize(tc.xs); got != tc.want {
				t.Errorf("summarize(%v) = %+v, want %+v", tc.xs, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.xs[i] {
					t.Fatalf("summarize changed its input: %v", tc.xs)
				}
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		rate  float64
		i     int
		at    time.Duration // of call i, since start
		probe time.Duration // due() at start + probe
		due   int
		d     time.Duration
		count int
	}{
		{"1000/s: 1 ms apart", 1000, 3, 3 * time.Millisecond, 3 * time.Millisecond, 4, 5 * time.Second, 5000},
		{"1000/s: just before a send", 1000, 0, 0, 3*time.Millisecond - 1, 3, time.Second, 1000},
		{"before the start nothing is due", 1000, 1, time.Millisecond, -time.Millisecond, 0, 0, 0},
		{"3/s does not divide a second", 3, 1, 333333333 * time.Nanosecond, time.Second, 4, 2 * time.Second, 6},
		{"3/s: call 3 is due at exactly 1 s", 3, 3, time.Second, 999999999, 3, 0, 0},
		{"1500/s", 1500, 3, 2 * time.Millisecond, 2 * time.Millisecond, 4, 100 * time.Millisecond, 150},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := schedule{start: t0, rate: tc.rate}
			if got := s.at(tc.i).Sub(t0); got != tc.at {
				t.Errorf("at(%d) = start + %v, want + %v", tc.i, got, tc.at)
			}
			if got := s.due(t0.Add(tc.probe)); got != tc.due {
				t.Errorf("due(start + %v) = %d, want %d", tc.probe, got, tc.due)
			}
			if got := s.count(tc.d); got != tc.count {
				t.Errorf("count(%v) = %d, want %d", tc.d, got, tc.count)
			}
		})
	}
}

// TestScheduleConsistent: for every instant, the calls due are exactly those
// whose send time has come.
func TestScheduleConsistent(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	for _, rate := range []float64{1, 3, 7, 1000, 1234.5} {
		s := schedule{start: t0, rate: rate}
		for i := range 2000 {
			at := s.at(i)
			if got := s.due(at); got != i+1 {
				t.Fatalf("rate %v: due(at(%d)) = %d, want %d", rate, i, got, i+1)
			}
			if got := s.due(at.Add(-1)); got != i {
				t.Fatalf("rate %v: due(at(%d) - 1ns) = %d, want %d", rate, i, got, i)
			}
		}
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 12345.6: "12,346", -1234567: "-1,234,567"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}
