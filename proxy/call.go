package proxy

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/elazarl/goproxy"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// call is one request through the proxy, from its identification to the
// end of its response (goproxy's ProxyCtx.UserData).
type call struct {
	agent  string
	parsed toolcall.Call
	span   trace.Span

	// What the response headers say: the verdict ("" before a decision),
	// the ledger sequence of the deciding entry (-1: none) and an advisory.
	verdict  string
	seq      int64
	advisory string
	// approvalID is the approval a held call waited on; approved reports
	// that it was approved and the call forwarded.
	approvalID string
	approved   bool
	// filter keeps the tools of a tools/list answer the agent's scope
	// allows; nil: no filtering.
	filter func(name string) bool

	flight *flight // the forwarded action call; nil for protocol traffic
	// toolDown: the tool answered 502, 503 or 504 (a failure, not a
	// completed call).
	toolDown bool
	// release ends what a protocol stream holds (nil for none).
	release func()
	ended   atomic.Bool
}

// endpoint is the MCP endpoint of a request: host and path.
func endpoint(req *http.Request) string { return req.URL.Host + req.URL.Path }

// tunnel is the UserData of an intercepted CONNECT: the agent identified on
// it, which its inner requests inherit (goproxy copies UserData to them).
type tunnel struct{ agent string }

// decided is one evaluated message of a call.
type decided struct {
	msg *toolcall.Message
	d   *governor.Decision
	seq int64 // -1: not recorded (ledger disabled); seqSpooled: in the spool
}

// seqSpooled is the sequence of a decision whose entry the ledger kept in
// its local spool: recorded, numbered when replayed into the store.
const seqSpooled = 0

// verdict severities, for the verdict of a batch: the most severe wins.
var severity = [...]int{governor.Allow: 0, governor.Modify: 1, governor.Escalate: 2, governor.Deny: 3, governor.Suspend: 4}

// onRequest is goproxy's request hook for every plain request and every
// request inside an intercepted tunnel. A nil response forwards the
// (returned) request; a response answers the agent without contacting the
// upstream.
func (p *Proxy) onRequest(req *http.Request, gctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	p.stats.requests.Add(1)
	gctx.RoundTripper = p.upstream
	var agent string
	if t, ok := gctx.UserData.(*tunnel); ok {
		agent = t.agent
	} else if id, ok := p.identify(req.Header); ok {
		agent = id
	} else {
		p.stats.unauthenticated.Add(1)
		return req, authRequired(req)
	}
	c := &call{agent: agent, seq: -1}
	gctx.UserData = c
	body, truncated, err := inspectBody(req)
	if err != nil {
		return req, p.answer(req, c, http.StatusBadRequest, "invalid_request", "cannot read the request body")
	}
	tr := toolcall.Request{
		Method: req.Method, Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path, RawQuery: req.URL.RawQuery,
		ContentType: req.Header.Get("Content-Type"), SessionID: req.Header.Get("Mcp-Session-Id"),
		Body: body, Truncated: truncated,
	}
	if tr.SessionID != "" && (req.Method == http.MethodGet || req.Method == http.MethodDelete) &&
		!p.sessions.has(endpoint(req), tr.SessionID) {
		tr.SessionID = "" // not a session this endpoint issued: governed as a plain request
	}
	c.parsed = toolcall.Parse(tr, p.rules)
	req = req.WithContext(p.startSpan(req, c))
	if !c.parsed.Actions() {
		// The protocol's own traffic: forwarded without a decision.
		c.verdict = governor.Allow.String()
		p.prepareToolsFilter(req, c)
		if req.Method == http.MethodGet {
			// A session's event stream lasts as long as the session: a
			// shutdown ends it instead of waiting for it.
			ctx, cancel := context.WithCancel(req.Context())
			stop := context.AfterFunc(p.released, cancel)
			c.release = func() { stop(); cancel() }
			req = req.WithContext(ctx)
		}
		return req, nil
	}
	return p.govern(req, c)
}

// govern decides every action of the call, records each decision and acts
// on the most severe verdict.
func (p *Proxy) govern(req *http.Request, c *call) (*http.Request, *http.Response) {
	ctx := req.Context()
	results, resp := p.decide(ctx, req, c)
	if resp != nil {
		return req, resp
	}
	worst := results[0]
	for _, r := range results[1:] {
		if severity[r.d.Verdict] > severity[worst.d.Verdict] {
			worst = r
		}
	}
	for _, r := range results {
		if r.d.Advisory != "" {
			c.advisory = r.d.Advisory
			break
		}
	}
	c.verdict, c.seq = worst.d.Verdict.String(), worst.seq
	p.annotate(c, worst)
	p.stats.count(worst.d.Verdict)

	switch v := worst.d.Verdict; {
	case v == governor.Allow:
		return p.forward(req, c, worst)
	case v == governor.Modify && !c.parsed.Batch && c.parsed.Route != nil && !c.parsed.Route.Modify.Empty():
		c.parsed.Route.Modify.Apply(req.URL, req.Header)
		return p.forward(req, c, worst)
	case v == governor.Modify, v == governor.Escalate:
		// MODIFY without a route modification is treated as ESCALATE.
		if c.parsed.Batch {
			return req, p.refuseBatch(req, c, results, worst)
		}
		return p.holdCall(req, c, worst)
	default: // DENY, SUSPEND
		return req, p.refuse(req, c, worst)
	}
}

// decide evaluates and records each action of the call. A response is the
// refusal of a call that cannot be decided or recorded.
func (p *Proxy) decide(ctx context.Context, req *http.Request, c *call) ([]decided, *http.Response) {
	ctx, span := p.tracer.Start(ctx, "vigil.governance.evaluate")
	defer span.End()
	results := make([]decided, 0, len(c.parsed.Messages))
	for i := range c.parsed.Messages {
		m := &c.parsed.Messages[i]
		if m.Action == nil {
			continue
		}
		d, err := p.gov.Evaluate(governor.Request{AgentID: c.agent, Action: *m.Action})
		if errors.Is(err, governor.ErrUnknownAgent) {
			p.stats.unauthenticated.Add(1)
			return nil, p.endWith(c, authRequired(req))
		}
		if err != nil {
			// Fail closed: what cannot be decided is not forwarded.
			p.log.Error("proxy: the governor could not decide; call refused", "agent_id", c.agent, "err", err)
			c.verdict = governor.Deny.String()
			return nil, p.answer(req, c, http.StatusInternalServerError, "governance_error", "the call could not be decided and was refused")
		}
		r := decided{msg: m, d: d, seq: -1}
		if p.recorder != nil {
			// The state has changed: record the decision even if the agent
			// goes away meanwhile.
			rec, err := p.recorder.Append(context.WithoutCancel(ctx), d)
			if err != nil {
				p.log.Error("proxy: decision not recorded; call refused", "agent_id", c.agent, "action_id", d.ActionID, "err", err)
				c.verdict = d.Verdict.String()
				return nil, p.answer(req, c, http.StatusServiceUnavailable, "unavailable",
					"the decision could not be recorded; nothing was forwarded")
			}
			r.seq = rec.Sequence
			if rec.Spooled {
				r.seq = seqSpooled
			}
		}
		if p.observer != nil {
			p.observer.ObserveEvaluation()
		}
		results = append(results, r)
	}
	return results, nil
}

// forward lets the call through: it is in flight (for max_concurrent, trust
// and interruption) until its response ends.
func (p *Proxy) forward(req *http.Request, c *call, r decided) (*http.Request, *http.Response) {
	if err := p.gov.CallStarted(c.agent); err != nil {
		p.log.Warn("proxy: call not counted in flight", "agent_id", c.agent, "err", err)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	f := &flight{agent: c.agent, ctx: ctx, cancel: cancel, actionID: r.d.ActionID, actionType: r.d.Action.Type,
		target: r.d.Action.Target, seq: r.seq}
	c.flight = f
	p.flights.add(f)
	// A quarantine or suspension that arrived after the decision still
	// binds this call.
	if ov := p.gov.Overlay(c.agent); ov != nil && (ov.Quarantined || ov.Suspended) {
		p.interrupt(c.agent, ov)
	}
	p.stats.forwarded.Add(1)
	p.prepareToolsFilter(req, c)
	return req.WithContext(ctx), nil
}

// holdCall parks an escalated call on an approval until it is approved
// (forwarded), denied or the hold time ends (refused with the approval id,
// so the agent can retry after a later approval).
func (p *Proxy) holdCall(req *http.Request, c *call, r decided) (*http.Request, *http.Response) {
	if p.approvals == nil {
		return req, p.refuse(req, c, r)
	}
	a, err := p.requestApproval(req, c, r)
	if err != nil {
		return req, p.refuse(req, c, r)
	}
	c.approvalID = a.ID
	p.stats.held.Add(1)
	c.span.AddEvent("held for approval")
	ctx, cancel := context.WithTimeout(req.Context(), p.hold)
	stop := context.AfterFunc(p.released, cancel)
	got, err := p.approvals.Wait(ctx, a.ID)
	stop()
	cancel()
	if err == nil && got.Status == controlplane.ApprovalApproved {
		// Forwarded once, now: the governor's grant for one retry of the
		// identical call is used up by this call.
		if _, err := p.gov.RevokeApproval(c.agent, got.Digest); err != nil {
			p.log.Warn("proxy: approval grant not withdrawn", "agent_id", c.agent, "approval_id", a.ID, "err", err)
		}
		c.approved = true
		c.span.AddEvent("approved")
		return p.forward(req, c, r)
	}
	if err == nil {
		c.span.AddEvent("approval " + got.Status)
	}
	return req, p.refuse(req, c, r)
}

// refuseBatch refuses a JSON-RPC batch with a refused message as a whole;
// escalated messages get approvals (not held), so a retry after approval
// passes.
func (p *Proxy) refuseBatch(req *http.Request, c *call, results []decided, worst decided) *http.Response {
	if p.approvals != nil {
		for _, r := range results {
			if r.d.Verdict != governor.Escalate && r.d.Verdict != governor.Modify {
				continue
			}
			a, err := p.requestApproval(req, c, r)
			if err != nil {
				continue
			}
			if r.d == worst.d || c.approvalID == "" {
				c.approvalID = a.ID
			}
		}
	}
	return p.refuse(req, c, worst)
}

// requestApproval creates the pending approval of an escalated (recorded)
// decision; a failure is logged and the caller refuses the call.
func (p *Proxy) requestApproval(req *http.Request, c *call, r decided) (controlplane.Approval, error) {
	args := controlplane.RequestArgs{AgentID: c.agent, Action: r.d.Action, Reason: r.d.Reasoning}
	if r.seq > 0 {
		args.Ledger = &controlplane.LedgerRef{AgentID: c.agent, Sequence: r.seq}
	}
	a, err := p.approvals.Request(context.WithoutCancel(req.Context()), args)
	if err != nil {
		p.log.Error("proxy: escalated call recorded but no approval could be requested; refused", "agent_id", c.agent,
			"action_id", r.d.ActionID, "err", err)
	}
	return a, err
}
