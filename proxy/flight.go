package proxy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// CodeCallInterrupted is the context code of the provenance event recorded
// for each in-flight call cancelled because its agent was quarantined or
// suspended (actor "system", target the agent).
const CodeCallInterrupted = "PROXY.CALL_INTERRUPTED"

// flight is one forwarded action call (or allowed tunnel) of an agent, in
// flight until its response (or tunnel) ends.
type flight struct {
	agent      string
	ctx        context.Context // the forwarded request's; cancelled on interruption
	cancel     context.CancelCauseFunc
	actionID   string
	actionType string
	target     string
	seq        int64
}

// interruption is the cancellation cause of an interrupted flight.
type interruption struct{ reason string }

func (i *interruption) Error() string { return "proxy: call interrupted: " + i.reason }

// interruption returns why governance cancelled f, or nil (also for a nil
// f: protocol traffic is never interrupted).
func (f *flight) interruption() *interruption {
	var i *interruption
	if f != nil && errors.As(context.Cause(f.ctx), &i) {
		return i
	}
	return nil
}

// interrupted reports whether governance cancelled f.
func (f *flight) interrupted() bool { return f.interruption() != nil }

// flights is the registry of the calls in flight, per agent.
type flights struct {
	mu      sync.Mutex
	byAgent map[string]map[*flight]struct{}
}

func newFlights() *flights { return &flights{byAgent: map[string]map[*flight]struct{}{}} }

func (fs *flights) add(f *flight) {
	fs.mu.Lock()
	m := fs.byAgent[f.agent]
	if m == nil {
		m = map[*flight]struct{}{}
		fs.byAgent[f.agent] = m
	}
	m[f] = struct{}{}
	fs.mu.Unlock()
}

func (fs *flights) remove(f *flight) {
	fs.mu.Lock()
	if m := fs.byAgent[f.agent]; m != nil {
		delete(m, f)
		if len(m) == 0 {
			delete(fs.byAgent, f.agent)
		}
	}
	fs.mu.Unlock()
}

// cancelAll cancels every flight of agent not yet cancelled, with cause, and
// returns them.
func (fs *flights) cancelAll(agent string, cause error) []*flight {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []*flight
	for f := range fs.byAgent[agent] {
		if f.ctx.Err() == nil {
			f.cancel(cause)
			out = append(out, f)
		}
	}
	return out
}

// count returns how many calls of agent are in flight.
func (fs *flights) count(agent string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.byAgent[agent])
}

// interrupt cancels the in-flight calls of an agent that is quarantined or
// suspended, and records each interruption (in the background: the caller
// may be publishing overlays).
func (p *Proxy) interrupt(agent string, ov *governor.Overlay) {
	why := "agent suspended"
	if ov.Quarantined {
		why = "agent quarantined"
	}
	if len(ov.Directives) > 0 {
		why += " (directive " + strings.Join(ov.Directives, ", ") + ")"
	}
	cut := p.flights.cancelAll(agent, &interruption{reason: why})
	if len(cut) == 0 {
		return
	}
	p.stats.interrupted.Add(int64(len(cut)))
	for _, f := range cut {
		p.log.Warn("proxy: in-flight call interrupted", "agent_id", agent, "action_id", f.actionID, "reason", why)
	}
	if p.events == nil {
		return
	}
	directives := append([]string(nil), ov.Directives...)
	go func() {
		for _, f := range cut {
			e := controlplane.NewEvent(controlplane.ActorSystem, controlplane.ActorTypeSystem, agent, CodeCallInterrupted, why,
				map[string]any{"action_id": f.actionID, "action_type": f.actionType, "action_target": f.target,
					"ledger_sequence": f.seq, "directives": directives})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := p.events.AppendEvent(ctx, e); err != nil {
				p.log.Error("proxy: interruption not recorded", "agent_id", agent, "action_id", f.actionID, "err", err)
			}
			cancel()
		}
	}()
}

// end ends c once: its span, and for a forwarded action call its flight,
// which feeds trust with the outcome (an interrupted flight counts as
// interrupted whatever outcome says). outcome 0: nothing was forwarded.
func (c *call) end(p *Proxy, outcome governor.CallOutcome) {
	if !c.ended.CompareAndSwap(false, true) {
		return
	}
	if f := c.flight; f != nil {
		p.flights.remove(f)
		if f.interrupted() {
			outcome = governor.CallInterrupted
		}
		if outcome == 0 {
			outcome = governor.CallAbandoned
		}
		if err := p.gov.CallFinished(c.agent, outcome); err != nil {
			p.log.Warn("proxy: call end not counted", "agent_id", c.agent, "err", err)
		}
		f.cancel(nil)
	}
	if c.release != nil {
		c.release()
	}
	if c.span != nil {
		c.span.End()
	}
}
