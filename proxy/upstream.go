package proxy

import (
	"io"
	"net/http"
	"strconv"

	"github.com/elazarl/goproxy"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// roundTrip sends a forwarded request upstream, through the host's circuit
// breaker, with the call's trace context. It never returns an error: an
// upstream failure is answered 502 (unreachable) or 503 (breaker open) with
// the verdict of the decision taken, which goproxy passes on in plain and
// intercepted requests alike.
func (p *Proxy) roundTrip(req *http.Request, gctx *goproxy.ProxyCtx) (*http.Response, error) {
	c, _ := gctx.UserData.(*call)
	if c == nil { // not through onRequest: cannot happen; refuse
		return newResponse(req, http.StatusInternalServerError, "application/json", nil, nil), nil
	}
	host := req.URL.Host
	done, err := p.breakers.allow(host)
	if err != nil {
		p.stats.breakerOpen.Add(1)
		c.end(p, governor.CallFailed)
		resp := errorResponse(req, c, http.StatusServiceUnavailable, CodeUpstreamUnavailable,
			"the tool at "+host+" failed repeatedly; calls fail fast until it recovers")
		resp.Header.Set("Retry-After", strconv.Itoa(int(p.breakers.cfg.OpenFor.Seconds()+0.5)))
		return resp, nil
	}
	p.prop.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	resp, err := p.tr.RoundTrip(req)
	if err != nil {
		if req.Context().Err() != nil { // the agent went away, or governance interrupted the call
			done(errExcluded)
			c.end(p, governor.CallAbandoned) // or interrupted: end tells
			if i := c.flight.interruption(); i != nil {
				return errorResponse(req, c, http.StatusForbidden, CodeInterrupted, "the call was interrupted: "+i.reason), nil
			}
			return errorResponse(req, c, http.StatusBadGateway, CodeUpstreamUnreachable, "the call was cancelled"), nil
		}
		done(err)
		p.stats.upstreamErrors.Add(1)
		p.log.Warn("proxy: upstream unreachable", "agent_id", c.agent, "host", host, "err", err)
		c.span.SetStatus(codes.Error, "upstream unreachable")
		c.end(p, governor.CallFailed)
		return errorResponse(req, c, http.StatusBadGateway, CodeUpstreamUnreachable,
			"the tool at "+host+" could not be reached: "+err.Error()), nil
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		done(errUpstreamStatus)
		c.toolDown = true
	default:
		done(nil)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && c.parsed.Kind == toolcall.KindMCP {
		p.sessions.add(endpoint(req), id)
	}
	c.setHeaders(resp.Header)
	tb := &trackedBody{rc: resp.Body, c: c, p: p}
	if rw, ok := resp.Body.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
		// An upgraded connection (WebSocket): goproxy relays both ways
		// through the body, which must stay writable.
		resp.Body = &trackedConn{trackedBody: tb, w: rw}
		return resp, nil
	}
	resp.Body = tb
	return resp, nil
}

// trackedConn is the body of an upgraded connection: readable and
// writable, the call in flight until it closes.
type trackedConn struct {
	*trackedBody
	w io.Writer
}

func (t *trackedConn) Write(p []byte) (int, error) { return t.w.Write(p) }

// trackedBody is a forwarded response's body: its end (EOF, an error or an
// early close) ends the call.
type trackedBody struct {
	rc io.ReadCloser
	c  *call
	p  *Proxy
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF && b.c.toolDown:
		b.c.end(b.p, governor.CallFailed) // the tool (or its gateway) answered 502, 503 or 504
	case err == io.EOF:
		b.c.end(b.p, governor.CallCompleted)
	case err != nil && b.c.flight != nil && b.c.flight.ctx.Err() != nil:
		b.c.end(b.p, governor.CallAbandoned) // the agent went away, or governance cut the call: end tells
	case err != nil:
		b.c.end(b.p, governor.CallFailed) // the tool broke off its answer
	}
	return n, err
}

func (b *trackedBody) Close() error {
	err := b.rc.Close()
	// Closed before its end: the agent went away (or the call was cut).
	b.c.end(b.p, governor.CallAbandoned)
	return err
}
