package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// target is one way to reach the upstream: directly, through plain goproxy
// or through a Vigil.
type target struct {
	name      string
	upstream  string // http://host:port of the tool
	client    *http.Client
	vigil     bool // check X-Vigil-Verdict
	ledger    bool // check X-Vigil-Ledger-Seq
	postEvery int  // every n-th call is a POST (create); 0: GETs only

	next     atomic.Int64 // call counter: the item ids
	answered atomic.Int64 // responses received, whatever their status
	maxSeq   atomic.Int64 // highest X-Vigil-Ledger-Seq seen
	errs     errorLog
}

// newTarget returns a target that reaches upstream through proxy (nil:
// directly), with at most conns connections.
func newTarget(name, upstream string, proxy *url.URL, conns, postEvery int) *target {
	tr := &http.Transport{
		MaxIdleConnsPerHost: 64,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
		IdleConnTimeout:     90 * time.Second,
	}
	if proxy != nil {
		tr.Proxy = http.ProxyURL(proxy)
	}
	return &target{name: name, upstream: upstream, postEvery: postEvery,
		client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// call makes one tool call and checks its answer: 200 (GET) or 201 (POST)
// and, through Vigil, an ALLOW verdict with its ledger sequence.
func (t *target) call(ctx context.Context) error {
	i := t.next.Add(1)
	var req *http.Request
	want := http.StatusOK
	if t.postEvery > 0 && i%int64(t.postEvery) == 0 {
		body := fmt.Appendf(nil, `{"name":"item-%d","qty":%d,"supplier":"acme"}`, i, 1+i%50)
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, t.upstream+"/api/items", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		want = http.StatusCreated
	} else {
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, t.upstream+"/api/items?id="+strconv.FormatInt(i, 10), nil)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return t.errs.add(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	t.answered.Add(1)
	switch {
	case err != nil:
		return t.errs.add(fmt.Errorf("%s %s: reading the body: %w", req.Method, req.URL.Path, err))
	case resp.StatusCode != want:
		return t.errs.add(fmt.Errorf("%s %s: status %d, want %d (verdict %q)", req.Method, req.URL.Path,
			resp.StatusCode, want, resp.Header.Get("X-Vigil-Verdict")))
	case n == 0:
		return t.errs.add(fmt.Errorf("%s %s: empty body", req.Method, req.URL.Path))
	}
	if !t.vigil {
		return nil
	}
	if v := resp.Header.Get("X-Vigil-Verdict"); v != "ALLOW" {
		return t.errs.add(fmt.Errorf("%s %s: X-Vigil-Verdict %q, want ALLOW", req.Method, req.URL.Path, v))
	}
	if !t.ledger {
		return nil
	}
	seq, err := strconv.ParseInt(resp.Header.Get("X-Vigil-Ledger-Seq"), 10, 64)
	if err != nil || seq < 1 {
		return t.errs.add(fmt.Errorf("%s %s: X-Vigil-Ledger-Seq %q", req.Method, req.URL.Path, resp.Header.Get("X-Vigil-Ledger-Seq")))
	}
	for {
		m := t.maxSeq.Load()
		if seq <= m || t.maxSeq.CompareAndSwap(m, seq) {
			return nil
		}
	}
}

// errorLog counts errors and keeps the first few.
type errorLog struct {
	n     atomic.Int64
	mu    sync.Mutex
	first []string
}

func (l *errorLog) add(err error) error {
	if l.n.Add(1) <= 5 {
		l.mu.Lock()
		l.first = append(l.first, err.Error())
		l.mu.Unlock()
	}
	return err
}

func (l *errorLog) samples() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.first)
}

// Throughput is one closed-loop measurement.
type Throughput struct {
	ReqPerSec float64 `json:"req_per_sec"`
	Completed int64   `json:"completed"` // correct answers within the window
	Errors    int64   `json:"errors"`
	// Calls is every call of the measurement, those answered after the
	// window included; CPUPerCall the CPU time each process used per call
	// (µs; "generator" is the load program, "total" all of them), and
	// CoresBusy all of their CPU time ÷ wall time.
	Calls      int64              `json:"calls"`
	CPUPerCall map[string]float64 `json:"cpu_us_per_call"`
	CoresBusy  float64            `json:"cores_busy"`
	Noise      Noise              `json:"noise"`
}

// Noise is what else ran during a measurement, in cores: Other is the
// machine's busy time (/proc/stat: all but idle, iowait and steal) less the
// benchmark processes' CPU time, ÷ wall time: other processes, and kernel
// work not charged to a process (block I/O completion, some of the network
// stack); Steal is the time the hypervisor gave the vCPUs to something else.
type Noise struct {
	Other float64 `json:"other_cores"`
	Steal float64 `json:"steal_cores"`
}

// closedLoop runs conns workers, each sending calls back to back over its
// keep-alive connection, for d; calls completed after d are answered but not
// counted.
func closedLoop(ctx context.Context, t *target, conns int, d time.Duration) Throughput {
	start := time.Now()
	deadline := start.Add(d)
	var done, errs atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				err := t.call(ctx)
				switch {
				case err != nil:
					errs.Add(1)
				case !time.Now().After(deadline):
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return Throughput{ReqPerSec: float64(done.Load()) / d.Seconds(), Completed: done.Load(), Errors: errs.Load()}
}

// Latency is one open-loop measurement; durations in microseconds.
type Latency struct {
	Offered  float64 `json:"offered_per_sec"`
	Achieved float64 `json:"achieved_per_sec"` // correct answers ÷ (last answer − first scheduled send)
	Calls    int     `json:"calls"`
	Errors   int64   `json:"errors"`
	// From the scheduled send time to the end of the response body (what an
	// agent sending at this rate waits: no coordinated omission).
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Max  float64 `json:"max_us"`
	// From the actual send: the service time alone.
	ServiceP50 float64 `json:"service_p50_us"`
	ServiceP99 float64 `json:"service_p99_us"`
	// How late the generator sent: actual − scheduled send time.
	LagP50 float64 `json:"lag_p50_us"`
	LagP99 float64 `json:"lag_p99_us"`
	Noise  Noise   `json:"noise"`
}

// timing is one call of a latency measurement: its scheduled send (since
// the first), latency from then and service time from the actual send.
type timing struct{ at, latency, service time.Duration }

// openLoop sends calls at rate for d on a fixed schedule (call i at
// start + i/rate), each from its own goroutine, so a slow answer never delays
// a later send, and measures each call from its scheduled time.
func openLoop(ctx context.Context, t *target, rate float64, d time.Duration) (Latency, []timing) {
	s := schedule{start: time.Now().Add(time.Millisecond), rate: rate}
	n := s.count(d)
	lat := make([]time.Duration, n)
	svc := make([]time.Duration, n)
	lag := make([]time.Duration, n)
	ends := make([]time.Duration, n) // since s.start
	failed := make([]bool, n)
	var wg sync.WaitGroup
	sentN := 0
	for sentN < n && ctx.Err() == nil {
		sleepUntil(s.at(sentN))
		sent := time.Now()
		// Every call due by now goes (more than one when the generator ran
		// late), each timed from its own scheduled send.
		for due := min(s.due(sent), n); sentN < due; sentN++ {
			i, at := sentN, s.at(sentN)
			lag[i] = sent.Sub(at)
			wg.Go(func() {
				err := t.call(ctx)
				end := time.Now()
				lat[i], svc[i], ends[i], failed[i] = end.Sub(at), end.Sub(sent), end.Sub(s.start), err != nil
			})
		}
	}
	wg.Wait()
	res := Latency{Offered: rate, Calls: sentN}
	var ok, okSvc []time.Duration
	var last time.Duration
	lag = lag[:sentN]
	calls := make([]timing, 0, sentN)
	for i := range sentN {
		if failed[i] {
			res.Errors++
			continue
		}
		calls = append(calls, timing{at: s.at(i).Sub(s.start), latency: lat[i], service: svc[i]})
		ok = append(ok, lat[i])
		okSvc = append(okSvc, svc[i])
		last = max(last, ends[i])
	}
	if last > 0 {
		res.Achieved = float64(len(ok)) / last.Seconds()
	}
	slices.Sort(ok)
	slices.Sort(okSvc)
	slices.Sort(lag)
	res.P50, res.P90, res.P99 = micros(percentile(ok, 50)), micros(percentile(ok, 90)), micros(percentile(ok, 99))
	res.P999, res.Max = micros(percentile(ok, 99.9)), micros(percentile(ok, 100))
	res.ServiceP50, res.ServiceP99 = micros(percentile(okSvc, 50)), micros(percentile(okSvc, 99))
	res.LagP50, res.LagP99 = micros(percentile(lag, 50)), micros(percentile(lag, 99))
	return res, calls
}

// writeCSV writes calls to path: scheduled send (ms since the first),
// latency and service time (µs).
func writeCSV(path string, calls []timing) error {
	var b bytes.Buffer
	b.WriteString("at_ms,latency_us,service_us\n")
	for _, c := range calls {
		fmt.Fprintf(&b, "%.3f,%.1f,%.1f\n", float64(c.at)/float64(time.Millisecond), micros(c.latency), micros(c.service))
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
