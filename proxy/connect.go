package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// onConnect is goproxy's CONNECT hook. The agent is identified on the
// CONNECT. With a CA the tunnel is intercepted and each inner request is
// governed like a plain one; without, the CONNECT itself is one "connect"
// action on host:port and the tunnel is in flight until it closes.
func (p *Proxy) onConnect(host string, gctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	req := gctx.Req
	p.stats.requests.Add(1)
	agent, ok := p.identify(req.Header)
	if !ok {
		p.stats.unauthenticated.Add(1)
		return &goproxy.ConnectAction{Action: goproxy.ConnectProxyAuthHijack, Hijack: finish407}, host
	}
	if p.ca != nil {
		gctx.UserData = &tunnel{agent: agent}
		gctx.RoundTripper = p.upstream
		return &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: func(h string, _ *goproxy.ProxyCtx) (*tls.Config, error) {
			return p.ca.TLSConfig(hostOnly(h))
		}}, host
	}
	c := &call{agent: agent, seq: -1, parsed: toolcall.ParseConnect(host)}
	// The tunnel outlives the CONNECT's handler, and with it its context.
	r := req.WithContext(context.WithoutCancel(req.Context()))
	r = r.WithContext(p.startSpan(r, c))
	if _, resp := p.govern(r, c); resp != nil {
		gctx.Resp = resp
		return &goproxy.ConnectAction{Action: goproxy.ConnectReject}, host
	}
	p.pending.Store(req, c)
	// goproxy dials next; should it not (the client gone before the
	// hijack), the call must not stay in flight forever.
	time.AfterFunc(pendingTunnelTimeout, func() {
		if _, ok := p.pending.LoadAndDelete(req); ok {
			c.end(p, governor.CallAbandoned)
		}
	})
	return &goproxy.ConnectAction{Action: goproxy.ConnectAccept}, host
}

// pendingTunnelTimeout bounds how long an allowed CONNECT waits for goproxy
// to dial its target.
const pendingTunnelTimeout = 30 * time.Second

// finish407 completes the 407 answer to a CONNECT (goproxy wrote the status
// line) and closes the connection.
func finish407(_ *http.Request, conn net.Conn, _ *goproxy.ProxyCtx) {
	defer conn.Close()
	b := errorJSON(CodeProxyAuth, proxyAuthMessage)
	_, _ = fmt.Fprintf(conn, "Proxy-Authenticate: Basic realm=\"vigil\"\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(b), b)
}

// dialTunnel dials the target of an allowed CONNECT through the host's
// breaker; the tunnel's connection ends the call when it closes, and is
// closed when governance interrupts the call.
func (p *Proxy) dialTunnel(req *http.Request, network, addr string) (net.Conn, error) {
	v, _ := p.pending.LoadAndDelete(req)
	c, _ := v.(*call)
	done, err := p.breakers.allow(addr)
	if err != nil {
		p.stats.breakerOpen.Add(1)
		if c != nil {
			c.end(p, governor.CallFailed)
		}
		return nil, fmt.Errorf("the tool at %s failed repeatedly; calls fail fast until it recovers", addr)
	}
	ctx := context.Background()
	if c != nil && c.flight != nil {
		ctx = c.flight.ctx
	}
	conn, err := p.dialer.DialContext(ctx, network, addr)
	if err != nil {
		done(err)
		p.stats.upstreamErrors.Add(1)
		if c != nil {
			c.end(p, governor.CallFailed)
		}
		return nil, err
	}
	done(nil)
	if c == nil || c.flight == nil {
		return conn, nil
	}
	stop := context.AfterFunc(c.flight.ctx, func() { _ = conn.Close() })
	return &tunnelConn{Conn: conn, c: c, p: p, stop: stop}, nil
}

// tunnelConn is the upstream side of an allowed CONNECT tunnel.
type tunnelConn struct {
	net.Conn
	c    *call
	p    *Proxy
	stop func() bool
}

func (t *tunnelConn) Close() error {
	err := t.Conn.Close()
	t.stop()
	t.c.end(t.p, governor.CallCompleted)
	return err
}

// hostOnly strips the port of host:port.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
