// Command load is the forward proxy's load benchmark (`make bench-proxy`;
// figures and method in BENCHMARKS.md, "Forward proxy (issue 5)").
//
// One run starts, each in its own process: an upstream tool (this program
// re-executed with -role upstream: GET /api/items?id=N answers a ~200-byte
// JSON item, POST /api/items echoes its JSON body), plain goproxy (-role
// goproxy: github.com/elazarl/goproxy as it comes, no hooks, with the same
// upstream transport settings as Vigil's proxy) and `vigil serve` (built
// from ./cmd/vigil unless -vigil names a binary) with a temporary
// configuration: one agent, load-bot, with a realistic contract (scope,
// boundaries, a sensitive target, a CEL authority expression, an anchor,
// limits that never throttle), one constitutional rule, the ledger in its
// default durable mode (sync: fsynced before the call proceeds) and every
// subsystem on. So every call through Vigil is identified, parsed, fully
// evaluated, appended to the hash-chained ledger and then forwarded.
// Nothing is pinned: the servers and this load generator share the
// machine's cores.
//
// Three targets reach the upstream: direct (no proxy), goproxy and vigil
// (Proxy-Authorization as load-bot). Each round measures, for every target
// in an order rotated by one each round (to spread drift):
//
//   - throughput at saturation: -conns (32) workers, each sending calls back
//     to back over its keep-alive connection for -duration; correct answers
//     per second;
//   - latency at a fixed -rate (1,000 calls/s), open loop: call i is sent at
//     start + i/rate whatever happened to the calls before it, each from its
//     own goroutine, and timed from its scheduled send to the end of its
//     answer's body (no coordinated omission); p50, p90, p99, p99.9, max and
//     the rate actually achieved.
//
// Each measurement follows a -warmup of the same kind. Every answer is
// checked (200 for a GET, 201 for a POST; through Vigil X-Vigil-Verdict
// ALLOW and an X-Vigil-Ledger-Seq): a single failed call fails the run. The
// report gives medians over the rounds with their range, and the figures
// derived per round against plain goproxy of the same round: throughput
// ratio, added p50 and p99. During each saturation run the CPU time of
// every process (/proc/PID/stat, this program's own by getrusage) is read
// before and after, and reported per call: where the shared cores go. For
// every measurement the machine's other load and steal are derived from
// /proc/stat, so that a disturbed measurement shows. The goproxy and Vigil
// processes' VmRSS is sampled every 100 ms from /proc, and their VmHWM read
// at the end; the disk's fsync latency is probed before and after the
// rounds. Last, Vigil's ledger is verified (GET
// /v1/ledger/load-bot/verify): the chain must be intact and hold exactly one
// entry per call Vigil answered, warm-ups included.
//
// -variants adds two diagnostic Vigils, measured the same way in the same
// rounds: ledger durability "process" (vigil-process) and the ledger
// disabled (vigil-noledger), to attribute Vigil's cost to the fsync, the
// ledger or the governance. -durability process runs the main target itself
// in process mode. -json FILE writes the raw per-round results,
// -latency-csv DIR every call of each latency measurement; -keep keeps the
// temporary directory (configurations, logs, ledgers).
//
// The report goes to stdout (markdown), progress to stderr. Linux only for
// the memory and CPU figures (/proc) and the generator's precise sleeps
// (nanosleep(2) for the last stretch: the Go runtime's poller wakes an idle
// sleeper in whole milliseconds).
package main
