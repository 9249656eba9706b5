package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Results is everything one run measured (the -json output).
type Results struct {
	Started time.Time     `json:"started"`
	Machine Machine       `json:"machine"`
	Params  Params        `json:"params"`
	Targets []string      `json:"targets"`
	Rounds  []Round       `json:"rounds"`
	Memory  []Memory      `json:"memory"`
	Ledger  []LedgerCheck `json:"ledger"`
	// The disk under the ledgers, before the rounds and after them.
	FsyncBefore Fsync `json:"fsync_before"`
	FsyncAfter  Fsync `json:"fsync_after"`
}

// Machine is what the benchmark ran on.
type Machine struct {
	CPU        string `json:"cpu"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	Kernel     string `json:"kernel"`
	LoadBefore string `json:"load_before"` // /proc/loadavg: 1, 5, 15 min
	LoadAfter  string `json:"load_after"`
}

// Params are the flags of the run.
type Params struct {
	Rounds     int     `json:"rounds"`
	DurationS  float64 `json:"duration_s"`
	WarmupS    float64 `json:"warmup_s"`
	Conns      int     `json:"conns"`
	Rate       float64 `json:"rate"`
	PostEvery  int     `json:"post_every"`
	Durability string  `json:"durability"`
	Variants   bool    `json:"variants"`
}

// Round is one round: every target measured once per mode, in Order.
type Round struct {
	Order      []string              `json:"order"`
	Throughput map[string]Throughput `json:"throughput"`
	Latency    map[string]Latency    `json:"latency"`
}

// Memory is one server process's resident memory, in KiB.
type Memory struct {
	Process string `json:"process"`
	PID     int    `json:"pid"`
	IdleKiB int64  `json:"idle_kib"` // VmRSS after start, before any call
	PeakKiB int64  `json:"peak_kib"` // highest VmRSS sampled every 100 ms
	HWMKiB  int64  `json:"hwm_kib"`  // VmHWM at the end: the kernel's own peak
}

// LedgerCheck is a Vigil's ledger verification after the run.
type LedgerCheck struct {
	Target        string  `json:"target"`
	Answered      int64   `json:"answered"` // calls this Vigil answered (warm-ups included)
	MaxSeq        int64   `json:"max_seq"`  // highest X-Vigil-Ledger-Seq seen
	VerifySeconds float64 `json:"verify_seconds"`
	Error         string  `json:"error,omitempty"`
	Report        struct {
		Valid        bool   `json:"valid"`
		Entries      int64  `json:"entries"`
		HeadSequence int64  `json:"head_sequence"`
		Reason       string `json:"reason"`
	} `json:"report"`
}

// OK: the chain is intact and holds exactly one entry per answered call.
func (l LedgerCheck) OK() bool {
	return l.Error == "" && l.Report.Valid && l.Report.Entries == l.Answered && l.MaxSeq == l.Answered
}

// Goals of the issue.
const (
	goalRatio    = 0.85
	goalAddedP50 = 500.0  // µs
	goalAddedP99 = 1500.0 // µs
	goalMemKiB   = 64 << 10
)

// series collects one figure of target over the rounds.
func (r *Results) series(target string, f func(Throughput, Latency) float64) []float64 {
	var out []float64
	for _, rd := range r.Rounds {
		out = append(out, f(rd.Throughput[target], rd.Latency[target]))
	}
	return out
}

// perRound collects f(a, b) over the rounds, for the figures derived from
// two targets measured in the same round.
func (r *Results) perRound(a, b string, f func(a, b Throughput, la, lb Latency) float64) []float64 {
	var out []float64
	for _, rd := range r.Rounds {
		out = append(out, f(rd.Throughput[a], rd.Throughput[b], rd.Latency[a], rd.Latency[b]))
	}
	return out
}

func tput(t Throughput, _ Latency) float64 { return t.ReqPerSec }

func writeReport(w io.Writer, r *Results) {
	p, m := r.Params, r.Machine
	fmt.Fprintf(w, "# Forward proxy load benchmark (test/load)\n\n")
	fmt.Fprintf(w, "%s; %s, %d CPUs (GOMAXPROCS %d), %s, Linux %s; load average %s before, %s after.\n",
		r.Started.Format("2006-01-02 15:04 MST"), m.CPU, m.NumCPU, m.GOMAXPROCS, m.GoVersion, m.Kernel, m.LoadBefore, m.LoadAfter)
	fmt.Fprintf(w, "%d round(s); each measurement %gs after a %gs warm-up; targets in a rotated order each round; ", p.Rounds, p.DurationS, p.WarmupS)
	fmt.Fprintf(w, "calls: GET /api/items?id=N (read)")
	if p.PostEvery > 0 {
		fmt.Fprintf(w, ", every %s a POST /api/items with a JSON body (create)", ordinal(p.PostEvery))
	}
	fmt.Fprintf(w, "; `vigil` ledger durability: %s. Figures: median [min – max] over the rounds.\n", p.Durability)
	fb, fa := r.FsyncBefore, r.FsyncAfter
	fmt.Fprintf(w, "The disk under the ledgers (%d appends of 4.8 KB, each fsynced): p50 %s ms, p99 %s ms, max %s ms before the rounds; p50 %s, p99 %s, max %s after.\n\n",
		fb.N, ms(fb.P50), ms(fb.P99), ms(fb.Max), ms(fa.P50), ms(fa.P99), ms(fa.Max))

	fmt.Fprintf(w, "## Throughput at saturation (%d connections, closed loop)\n\n", p.Conns)
	fmt.Fprintf(w, "| target | req/s | min – max | rounds |\n|---|---|---|---|\n")
	for _, t := range r.Targets {
		xs := r.series(t, tput)
		s := summarize(xs)
		fmt.Fprintf(w, "| %s | **%s** | %s – %s | %s |\n", t, thousands(s.Median), thousands(s.Min), thousands(s.Max), joinF(xs, thousands))
	}

	procs := append([]string{"generator", "upstream"}, r.Targets[1:]...)
	fmt.Fprintf(w, "\nCPU time per call during each target's saturation run, by process (µs; medians), and all the CPU used ÷ wall time (2 = both cores):\n\n")
	fmt.Fprintf(w, "| target | cores busy | %s | all |\n|---|---|%s---|\n", strings.Join(procs, " | "), strings.Repeat("---|", len(procs)))
	for _, t := range r.Targets {
		busy := summarize(r.series(t, func(tp Throughput, _ Latency) float64 { return tp.CoresBusy }))
		fmt.Fprintf(w, "| %s | %.2f", t, busy.Median)
		for _, p := range append(procs, "total") {
			fmt.Fprintf(w, " | %.1f", summarize(r.series(t, func(tp Throughput, _ Latency) float64 { return tp.CPUPerCall[p] })).Median)
		}
		fmt.Fprintf(w, " |\n")
	}

	fmt.Fprintf(w, "\n## Latency at a fixed %s calls/s (open loop, from the scheduled send, ms)\n\n", thousands(p.Rate))
	fmt.Fprintf(w, "| target | achieved/s | p50 | p90 | p99 | p99.9 | max |\n|---|---|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(w, "| %s | %s", t, thousands(summarize(r.series(t, func(_ Throughput, l Latency) float64 { return l.Achieved })).Median))
		for _, f := range []func(Latency) float64{
			func(l Latency) float64 { return l.P50 }, func(l Latency) float64 { return l.P90 },
			func(l Latency) float64 { return l.P99 }, func(l Latency) float64 { return l.P999 },
			func(l Latency) float64 { return l.Max },
		} {
			s := summarize(r.series(t, func(_ Throughput, l Latency) float64 { return f(l) }))
			fmt.Fprintf(w, " | %s [%s – %s]", ms(s.Median), ms(s.Min), ms(s.Max))
		}
		fmt.Fprintf(w, " |\n")
	}
	fmt.Fprintf(w, "\nService time (from the actual send) and the generator's own lag (actual − scheduled send), ms, medians:\n\n")
	fmt.Fprintf(w, "| target | service p50 | service p99 | send lag p50 | send lag p99 |\n|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(w, "| %s", t)
		for _, f := range []func(Latency) float64{
			func(l Latency) float64 { return l.ServiceP50 }, func(l Latency) float64 { return l.ServiceP99 },
			func(l Latency) float64 { return l.LagP50 }, func(l Latency) float64 { return l.LagP99 },
		} {
			fmt.Fprintf(w, " | %s", ms(summarize(r.series(t, func(_ Throughput, l Latency) float64 { return f(l) })).Median))
		}
		fmt.Fprintf(w, " |\n")
	}

	mem := map[string]Memory{}
	for _, mm := range r.Memory {
		mem[mm.Process] = mm
	}
	fmt.Fprintf(w, "\n## Against the goals (per-round figures against plain goproxy of the same round)\n\n")
	fmt.Fprintf(w, "| target | throughput ÷ goproxy (≥ 85 %%) | added p50 (≤ 0.5 ms) | added p99 (≤ 1.5 ms) | peak memory (≤ 64 MiB) |\n|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		if !strings.HasPrefix(t, "vigil") {
			continue
		}
		name := t
		if t != "vigil" {
			name += " (diagnostic)"
		}
		ratio := summarize(r.perRound(t, "goproxy", func(a, b Throughput, _, _ Latency) float64 { return a.ReqPerSec / b.ReqPerSec }))
		d50 := summarize(r.perRound(t, "goproxy", func(_, _ Throughput, a, b Latency) float64 { return a.P50 - b.P50 }))
		d99 := summarize(r.perRound(t, "goproxy", func(_, _ Throughput, a, b Latency) float64 { return a.P99 - b.P99 }))
		hwm := max(mem[t].HWMKiB, mem[t].PeakKiB) // the kernel's HWM may lag its RSS by a few pages
		fmt.Fprintf(w, "| %s | %.1f %% [%.1f – %.1f] %s | %s ms [%s – %s] %s | %s ms [%s – %s] %s | %s MiB %s |\n", name,
			100*ratio.Median, 100*ratio.Min, 100*ratio.Max, mark(ratio.Median >= goalRatio),
			ms(d50.Median), ms(d50.Min), ms(d50.Max), mark(d50.Median <= goalAddedP50),
			ms(d99.Median), ms(d99.Min), ms(d99.Max), mark(d99.Median <= goalAddedP99),
			mib(hwm), mark(hwm > 0 && hwm <= goalMemKiB))
	}

	fmt.Fprintf(w, "\n## Memory (resident set, MiB)\n\n")
	fmt.Fprintf(w, "| process | idle, before load | peak VmRSS (sampled every 100 ms) | VmHWM at the end |\n|---|---|---|---|\n")
	for _, mm := range r.Memory {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", mm.Process, mib(mm.IdleKiB), mib(mm.PeakKiB), mib(mm.HWMKiB))
	}

	writeNoise(w, r)

	if len(r.Ledger) > 0 {
		fmt.Fprintf(w, "\n## Ledger after the run (GET /v1/ledger/%s/verify)\n\n", agentID)
		fmt.Fprintf(w, "| target | calls answered | highest X-Vigil-Ledger-Seq | chain valid | entries | verify took | one entry per call |\n|---|---|---|---|---|---|---|\n")
		for _, l := range r.Ledger {
			valid := fmt.Sprint(l.Report.Valid)
			if l.Error != "" {
				valid = "error: " + l.Error
			} else if l.Report.Reason != "" {
				valid += " (" + l.Report.Reason + ")"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.1f s | %s |\n", l.Target, thousands(float64(l.Answered)),
				thousands(float64(l.MaxSeq)), valid, thousands(float64(l.Report.Entries)), l.VerifySeconds, mark(l.OK()))
		}
	}
}

func mark(ok bool) string {
	if ok {
		return "✅"
	}
	return "❌"
}

// ms formats microseconds as milliseconds.
func ms(us float64) string {
	if us >= 10000 || us <= -10000 {
		return fmt.Sprintf("%.1f", us/1000)
	}
	return fmt.Sprintf("%.2f", us/1000)
}

func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

// thousands formats x rounded, with a comma every three digits.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func joinF(xs []float64, f func(float64) string) string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return strings.Join(out, " ")
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return fmt.Sprintf("%dth", n)
	case n%10 == 1:
		return fmt.Sprintf("%dst", n)
	case n%10 == 2:
		return fmt.Sprintf("%dnd", n)
	case n%10 == 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}

// Noise thresholds above which a measurement is listed as disturbed.
const (
	noisyOther = 0.25 // cores
	noisySteal = 0.05
)

// writeNoise summarizes what else ran during the measurements and names
// the most disturbed ones.
func writeNoise(w io.Writer, r *Results) {
	type m struct {
		what string
		n    Noise
	}
	var all []m
	for i, rd := range r.Rounds {
		for _, t := range rd.Order {
			all = append(all, m{fmt.Sprintf("round %d throughput %s", i+1, t), rd.Throughput[t].Noise})
		}
		for _, t := range rd.Order {
			all = append(all, m{fmt.Sprintf("round %d latency %s", i+1, t), rd.Latency[t].Noise})
		}
	}
	var others, steals []float64
	var noisy []m
	for _, x := range all {
		others, steals = append(others, x.n.Other), append(steals, x.n.Steal)
		if x.n.Other > noisyOther || x.n.Steal > noisySteal {
			noisy = append(noisy, x)
		}
	}
	o, st := summarize(others), summarize(steals)
	fmt.Fprintf(w, "\n## Other load on the machine during the measurements (cores)\n\n")
	fmt.Fprintf(w, "Outside the benchmark's processes: median %.2f, max %.2f; hypervisor steal: median %.2f, max %.2f. ", o.Median, o.Max, st.Median, st.Max)
	fmt.Fprintf(w, "%d of %d measurements had more than %.2f cores of other load or %.2f of steal", len(noisy), len(all), noisyOther, noisySteal)
	if len(noisy) == 0 {
		fmt.Fprintf(w, ".\n")
		return
	}
	slices.SortFunc(noisy, func(a, b m) int { return cmp.Compare(b.n.Other+b.n.Steal, a.n.Other+a.n.Steal) })
	var worst []string
	for _, x := range noisy[:min(len(noisy), 5)] {
		worst = append(worst, fmt.Sprintf("%s (%.2f, steal %.2f)", x.what, x.n.Other, x.n.Steal))
	}
	fmt.Fprintf(w, "; the worst: %s.\n", strings.Join(worst, "; "))
}
