package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// options are the benchmark's flags.
type options struct {
	rounds     int
	duration   time.Duration
	warmup     time.Duration
	conns      int
	rate       float64
	postEvery  int
	vigilBin   string
	durability string
	variants   bool
	keep       bool
	jsonPath   string
	csvDir     string
}

func main() {
	role := flag.String("role", "", "internal: run as a child process, `role` upstream or goproxy")
	addr := flag.String("addr", "127.0.0.1:0", "internal: the child's listen address")
	var o options
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; each measures every target once per mode, in a rotated order")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measurement")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before each measurement (twice this once per target at start)")
	flag.IntVar(&o.conns, "conns", 32, "connections (closed-loop workers) at saturation")
	flag.Float64Var(&o.rate, "rate", 1000, "offered calls per second of the latency measurement")
	flag.IntVar(&o.postEvery, "post-every", 4, "every n-th call is a POST (create), the others GETs (read); 0: GETs only")
	flag.StringVar(&o.vigilBin, "vigil", "", "vigil `binary` to run (default: go build ./cmd/vigil into the temp dir)")
	flag.StringVar(&o.durability, "durability", "sync", "ledger durability `mode` of the vigil target: sync or process")
	flag.BoolVar(&o.variants, "variants", false, "also measure, as diagnostics, vigil with durability process and with the ledger disabled")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir (configurations, logs, ledgers)")
	flag.StringVar(&o.jsonPath, "json", "", "also write the raw results as JSON to `file`")
	flag.StringVar(&o.csvDir, "latency-csv", "", "write every call of each latency measurement to `dir`/roundN-TARGET.csv")
	flag.Parse()
	if *role != "" {
		os.Exit(runRole(*role, *addr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, o, os.Stdout, os.Stderr))
}

func (o options) validate() error {
	switch {
	case o.rounds < 1:
		return errors.New("-rounds must be at least 1")
	case o.duration < 100*time.Millisecond || o.warmup < 0:
		return errors.New("-duration must be at least 100ms and -warmup not negative")
	case o.conns < 1 || o.rate <= 0 || o.postEvery < 0:
		return errors.New("-conns and -rate must be positive, -post-every not negative")
	case o.durability != "sync" && o.durability != "process":
		return fmt.Errorf("-durability must be sync or process, got %q", o.durability)
	}
	return nil
}

// run is the whole benchmark; it returns the exit status.
func run(ctx context.Context, o options, stdout, stderr io.Writer) int {
	if err := o.validate(); err != nil {
		fmt.Fprintln(stderr, "load:", err)
		return 2
	}
	if o.csvDir != "" {
		if err := os.MkdirAll(o.csvDir, 0o755); err != nil {
			fmt.Fprintln(stderr, "load:", err)
			return 1
		}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "load: "+format+"\n", args...) }
	dir, err := os.MkdirTemp("", "vigil-load-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer func() {
		if o.keep {
			logf("kept %s", dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	res := &Results{Started: time.Now().UTC(), Machine: readMachine(), Params: o.params()}
	bin := o.vigilBin
	if bin == "" {
		logf("building ./cmd/vigil")
		if bin, err = buildVigil(ctx, dir); err != nil {
			logf("%v", err)
			return 1
		}
	}
	bench, err := startAll(bin, dir, o)
	if bench != nil {
		defer bench.stop()
	}
	if err != nil {
		logf("%v", err)
		return 1
	}
	res.Targets = bench.names()
	if res.FsyncBefore, err = probeFsync(dir, 1000); err != nil {
		logf("fsync probe: %v", err)
		return 1
	}
	for _, p := range append(bench.procs(), bench.upstream) {
		logf("%s: pid %d", p.name, p.pid())
	}
	if err := bench.measure(ctx, o, res, logf); err != nil {
		logf("FAILED: %v", err)
		return 1
	}
	res.Machine.LoadAfter = loadAvg()
	res.FsyncAfter, _ = probeFsync(dir, 1000)
	res.Memory = bench.memory()
	res.Ledger = bench.verifyLedgers(ctx, logf)
	writeReport(stdout, res)
	if o.jsonPath != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.jsonPath, append(b, '\n'), 0o644); err != nil {
			logf("%v", err)
			return 1
		}
	}
	for _, l := range res.Ledger {
		if !l.OK() {
			logf("FAILED: the ledger of %s does not account for every call (see the report)", l.Target)
			return 1
		}
	}
	return 0
}

func (o options) params() Params {
	return Params{Rounds: o.rounds, DurationS: o.duration.Seconds(), WarmupS: o.warmup.Seconds(), Conns: o.conns,
		Rate: o.rate, PostEvery: o.postEvery, Durability: o.durability, Variants: o.variants}
}

// bench is the processes under test and the targets that reach them.
type bench struct {
	upstream, goproxy *proc
	vigils            []*vigilProc
	targets           []*target
	stopMem           context.CancelFunc
	memDone           chan struct{}
}

// startAll starts the upstream, plain goproxy and the Vigils, and builds a
// target for each plus the direct one.
func startAll(bin, dir string, o options) (*bench, error) {
	b := &bench{}
	up, upAddr, err := startRole("upstream", dir)
	if err != nil {
		return b, err
	}
	b.upstream = up
	gp, gpAddr, err := startRole("goproxy", dir)
	if err != nil {
		return b, err
	}
	b.goproxy = gp
	setups := []vigilSetup{{name: "vigil", durability: o.durability, ledger: true}}
	if o.variants {
		setups = append(setups, vigilSetup{name: "vigil-process", durability: "process", ledger: true},
			vigilSetup{name: "vigil-noledger", durability: "sync", ledger: false})
	}
	for _, s := range setups {
		v, err := startVigil(bin, dir, s)
		if err != nil {
			return b, err
		}
		b.vigils = append(b.vigils, v)
	}
	upURL := "http://" + upAddr
	b.targets = []*target{
		newTarget("direct", upURL, nil, o.conns, o.postEvery),
		newTarget("goproxy", upURL, &url.URL{Scheme: "http", Host: gpAddr}, o.conns, o.postEvery),
	}
	for _, v := range b.vigils {
		t := newTarget(v.name, upURL, &url.URL{Scheme: "http", Host: v.proxy, User: url.UserPassword(agentID, agentToken)},
			o.conns, o.postEvery)
		t.vigil, t.ledger = true, v.setup.ledger
		b.targets = append(b.targets, t)
	}
	// Idle memory, then the watch for the peaks.
	for _, p := range b.procs() {
		if rss, _, err := procStatus(p.pid()); err == nil {
			p.idleRSS.Store(rss)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stopMem, b.memDone = cancel, make(chan struct{})
	go func() { watchMemory(ctx, b.procs(), 100*time.Millisecond); close(b.memDone) }()
	return b, nil
}

// procs returns the server processes (not the upstream, which every target
// shares).
func (b *bench) procs() []*proc {
	out := []*proc{b.goproxy}
	for _, v := range b.vigils {
		out = append(out, v.proc)
	}
	return out
}

func (b *bench) names() []string {
	var out []string
	for _, t := range b.targets {
		out = append(out, t.name)
	}
	return out
}

func (b *bench) stop() {
	if b.stopMem != nil {
		b.stopMem()
		<-b.memDone
	}
	for _, t := range b.targets {
		t.client.CloseIdleConnections()
	}
	for _, v := range b.vigils {
		v.stop(30 * time.Second)
	}
	for _, p := range []*proc{b.goproxy, b.upstream} {
		if p != nil {
			p.stop(5 * time.Second)
		}
	}
}

// alive fails when a process under test has exited.
func (b *bench) alive() error {
	for _, p := range append(b.procs(), b.upstream) {
		if err := p.alive(); err != nil {
			return err
		}
	}
	return nil
}

// check fails on an interruption, a target's errors (with the first ones)
// or a dead process.
func (b *bench) check(ctx context.Context, t *target) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	if n := t.errs.n.Load(); n > 0 {
		return fmt.Errorf("%s: %d failed calls; first: %s", t.name, n, strings.Join(t.errs.samples(), "; "))
	}
	return b.alive()
}

// measure runs the rounds: in each, throughput of every target, then
// latency of every target, in an order rotated by one each round.
func (b *bench) measure(ctx context.Context, o options, res *Results, logf func(string, ...any)) error {
	logf("warming up (%s per target): %s", 2*o.warmup, strings.Join(b.names(), ", "))
	for _, t := range b.targets {
		closedLoop(ctx, t, o.conns, 2*o.warmup)
		if err := b.check(ctx, t); err != nil {
			return err
		}
	}
	for r := range o.rounds {
		n := len(b.targets)
		order := make([]*target, n)
		for i := range n {
			order[i] = b.targets[(i+r)%n]
		}
		round := Round{Throughput: map[string]Throughput{}, Latency: map[string]Latency{}}
		for _, t := range order {
			round.Order = append(round.Order, t.name)
		}
		for _, t := range order {
			closedLoop(ctx, t, o.conns, o.warmup)
			before, calls0 := b.usage(), t.answered.Load()
			tp := closedLoop(ctx, t, o.conns, o.duration)
			tp.Calls = t.answered.Load() - calls0
			tp.CPUPerCall, tp.CoresBusy, tp.Noise = b.usage().since(before, tp.Calls)
			if err := b.check(ctx, t); err != nil {
				return err
			}
			round.Throughput[t.name] = tp
			logf("round %d/%d throughput %-15s %8.0f req/s  (other load %.2f cores, steal %.2f)", r+1, o.rounds, t.name,
				tp.ReqPerSec, tp.Noise.Other, tp.Noise.Steal)
		}
		for _, t := range order {
			openLoop(ctx, t, o.rate, o.warmup)
			before := b.usage()
			l, calls := openLoop(ctx, t, o.rate, o.duration)
			_, _, l.Noise = b.usage().since(before, int64(len(calls)))
			if err := b.check(ctx, t); err != nil {
				return err
			}
			if o.csvDir != "" {
				if err := writeCSV(filepath.Join(o.csvDir, fmt.Sprintf("round%d-%s.csv", r+1, t.name)), calls); err != nil {
					return err
				}
			}
			round.Latency[t.name] = l
			logf("round %d/%d latency    %-15s p50 %6.0f µs  p99 %7.0f µs  (%.0f/s; other load %.2f cores, steal %.2f)", r+1, o.rounds,
				t.name, l.P50, l.P99, l.Achieved, l.Noise.Other, l.Noise.Steal)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		res.Rounds = append(res.Rounds, round)
	}
	return nil
}

// usage is a reading of the CPU time used so far: by every process of the
// benchmark, by name ("generator": this one), and by the whole machine.
type usage struct {
	at    time.Time
	procs map[string]time.Duration
	mach  machineCPU
}

func (b *bench) usage() usage {
	u := usage{at: time.Now(), procs: map[string]time.Duration{"generator": selfCPU()}, mach: readMachineCPU()}
	for _, p := range append(b.procs(), b.upstream) {
		if d, err := procCPU(p.pid()); err == nil {
			u.procs[p.name] = d
		}
	}
	return u
}

// since returns, from before to u over calls calls: each process's CPU time
// per call (µs; "total": all of them), the cores they kept busy, and what
// else ran on the machine.
func (u usage) since(before usage, calls int64) (perCall map[string]float64, busy float64, n Noise) {
	wall := u.at.Sub(before.at).Seconds()
	var total time.Duration
	perCall = map[string]float64{}
	for name, d := range u.procs {
		used := d - before.procs[name]
		total += used
		if calls > 0 {
			perCall[name] = micros(used) / float64(calls)
		}
	}
	if calls > 0 {
		perCall["total"] = micros(total) / float64(calls)
	}
	steal := (u.mach.steal - before.mach.steal).Seconds()
	machBusy := wall*float64(runtime.NumCPU()) - (u.mach.idle - before.mach.idle).Seconds() - steal
	n.Other, n.Steal = (machBusy-total.Seconds())/wall, steal/wall
	return perCall, total.Seconds() / wall, n
}

// memory reads each server's VmHWM and returns the memory figures.
func (b *bench) memory() []Memory {
	var out []Memory
	for _, p := range b.procs() {
		m := Memory{Process: p.name, PID: p.pid(), IdleKiB: p.idleRSS.Load(), PeakKiB: p.peakRSS.Load()}
		if rss, hwm, err := procStatus(p.pid()); err == nil {
			m.HWMKiB = hwm
			m.PeakKiB = max(m.PeakKiB, rss)
		}
		out = append(out, m)
	}
	return out
}

// verifyLedgers asks each Vigil with a ledger to verify load-bot's chain and
// compares its length with the calls that Vigil answered.
func (b *bench) verifyLedgers(ctx context.Context, logf func(string, ...any)) []LedgerCheck {
	var out []LedgerCheck
	for i, v := range b.vigils {
		if !v.setup.ledger {
			continue
		}
		t := b.targets[2+i]
		lc := LedgerCheck{Target: v.name, Answered: t.answered.Load(), MaxSeq: t.maxSeq.Load()}
		start := time.Now()
		err := getJSON(ctx, "http://"+v.admin+"/v1/ledger/"+agentID+"/verify", &lc.Report)
		lc.VerifySeconds = time.Since(start).Seconds()
		if err != nil {
			lc.Error = err.Error()
			logf("verify %s: %v", v.name, err)
		}
		out = append(out, lc)
	}
	return out
}

func getJSON(ctx context.Context, u string, into any) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	req.Header.Set("X-Api-Key", apiKey)
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", u, resp.StatusCode, b)
	}
	return json.Unmarshal(b, into)
}

// readMachine describes the machine the benchmark runs on.
func readMachine() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), LoadBefore: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
