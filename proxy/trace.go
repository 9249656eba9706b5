package proxy

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigilhq/vigil/proxy/toolcall"
)

// Span attribute keys (ARCHITECTURE.md, Observability).
const (
	attrAgentID   = attribute.Key("gen_ai.agent.id")
	attrToolName  = attribute.Key("gen_ai.tool.name")
	attrOperation = attribute.Key("gen_ai.operation.name")
	attrVerdict   = attribute.Key("vigil.verdict")
	attrUCS       = attribute.Key("vigil.ucs")
	attrTier      = attribute.Key("vigil.tier")
	attrLedgerSeq = attribute.Key("vigil.ledger.sequence")
	// attrLedgerSpooled marks a decision whose entry waits in the ledger's
	// local spool (no sequence yet).
	attrLedgerSpooled = attribute.Key("vigil.ledger.spooled")
	attrMethod        = attribute.Key("http.request.method")
	attrServer        = attribute.Key("server.address")
)

// startSpan starts the call's span: "execute_tool {tool}" for an MCP tool
// call, "{METHOD} {host}" otherwise, a child of the agent's trace when the
// request carries one. It returns the request's context with the span.
func (p *Proxy) startSpan(req *http.Request, c *call) context.Context {
	ctx := req.Context()
	if req.Header.Get("Traceparent") != "" {
		ctx = p.prop.Extract(ctx, propagation.HeaderCarrier(req.Header))
	}
	tool := firstTool(&c.parsed)
	name := req.Method + " " + req.URL.Hostname()
	if tool != "" {
		name = "execute_tool " + tool
	}
	ctx, c.span = p.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	if c.span.IsRecording() {
		c.span.SetAttributes(attrAgentID.String(c.agent), attrMethod.String(req.Method), attrServer.String(req.URL.Hostname()))
		if tool != "" {
			c.span.SetAttributes(attrToolName.String(tool), attrOperation.String("execute_tool"))
		} else if m := firstAction(&c.parsed); m != nil {
			c.span.SetAttributes(attrToolName.String(m.Action.Type))
		}
	}
	return ctx
}

// annotate puts the deciding verdict on the call's span.
func (p *Proxy) annotate(c *call, r decided) {
	if !c.span.IsRecording() {
		return
	}
	c.span.SetAttributes(attrVerdict.String(r.d.Verdict.String()), attrUCS.Float64(r.d.UCS), attrTier.Int(r.d.Tier))
	switch {
	case r.seq > 0:
		c.span.SetAttributes(attrLedgerSeq.Int64(r.seq))
	case r.seq == seqSpooled:
		c.span.SetAttributes(attrLedgerSpooled.Bool(true))
	}
}

// firstTool returns the tool name of the call's first MCP tools/call ("" for
// none).
func firstTool(c *toolcall.Call) string {
	for _, m := range c.Messages {
		if m.Tool != "" {
			return m.Tool
		}
	}
	return ""
}

// firstAction returns the call's first message with an action, or nil.
func firstAction(c *toolcall.Call) *toolcall.Message {
	for i := range c.Messages {
		if c.Messages[i].Action != nil {
			return &c.Messages[i]
		}
	}
	return nil
}
