package proxy

import (
	"sync/atomic"

	"github.com/vigilhq/vigil/governor"
)

// Stats are the proxy's counters since it started.
type Stats struct {
	// Requests counts every request (and intercepted inner request) seen.
	Requests int64 `json:"requests"`
	// Unauthenticated counts the 407 answers.
	Unauthenticated int64 `json:"unauthenticated"`
	// Verdicts counts the deciding verdicts of governed calls.
	Verdicts map[string]int64 `json:"verdicts"`
	// Forwarded counts the action calls forwarded upstream.
	Forwarded int64 `json:"forwarded"`
	// Held counts the calls held for an approval.
	Held int64 `json:"held"`
	// Interrupted counts the in-flight calls cancelled by governance.
	Interrupted int64 `json:"interrupted"`
	// UpstreamErrors counts the calls whose tool could not be reached.
	UpstreamErrors int64 `json:"upstream_errors"`
	// BreakerOpen counts the calls failed fast by an open breaker.
	BreakerOpen int64 `json:"breaker_open"`
}

type counters struct {
	requests, unauthenticated, forwarded, held, interrupted, upstreamErrors, breakerOpen atomic.Int64
	verdicts                                                                             [governor.Suspend + 1]atomic.Int64
}

func (c *counters) count(v governor.Verdict) {
	if v <= governor.Suspend {
		c.verdicts[v].Add(1)
	}
}

// Stats returns a snapshot of the proxy's counters.
func (p *Proxy) Stats() Stats {
	s := Stats{
		Requests: p.stats.requests.Load(), Unauthenticated: p.stats.unauthenticated.Load(),
		Forwarded: p.stats.forwarded.Load(), Held: p.stats.held.Load(), Interrupted: p.stats.interrupted.Load(),
		UpstreamErrors: p.stats.upstreamErrors.Load(), BreakerOpen: p.stats.breakerOpen.Load(),
		Verdicts: map[string]int64{},
	}
	for v := governor.Allow; v <= governor.Suspend; v++ {
		s.Verdicts[v.String()] = p.stats.verdicts[v].Load()
	}
	return s
}

// InFlight returns how many forwarded calls of the agent are in flight.
func (p *Proxy) InFlight(agentID string) int { return p.flights.count(agentID) }

// BreakerState returns the state of the circuit breaker of an upstream
// host:port: "closed", "half-open" or "open".
func (p *Proxy) BreakerState(hostport string) string { return p.breakers.state(hostport) }
