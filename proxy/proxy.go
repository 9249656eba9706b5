package proxy

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/elazarl/goproxy"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/ledger"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// Governor is what the proxy needs of the governor; *governor.Engine
// satisfies it.
type Governor interface {
	Evaluate(governor.Request) (*governor.Decision, error)
	CallStarted(agentID string) error
	CallFinished(agentID string, outcome governor.CallOutcome) error
	// Contract is read for tools/list filtering (the agent's scope).
	Contract(agentID string) (governor.Contract, bool)
	// Overlay tells whether an agent is quarantined or suspended.
	Overlay(agentID string) *governor.Overlay
	// RevokeApproval withdraws the one-retry grant of an approved held call
	// the proxy forwarded.
	RevokeApproval(agentID, digest string) (bool, error)
}

// Recorder appends decisions to the ledger; *ledger.Ledger satisfies it.
type Recorder interface {
	Append(ctx context.Context, d *governor.Decision) (*ledger.Record, error)
}

// Holder is the override queue a held call waits on;
// *controlplane.Approvals satisfies it.
type Holder interface {
	Request(ctx context.Context, args controlplane.RequestArgs) (controlplane.Approval, error)
	Wait(ctx context.Context, id string) (controlplane.Approval, error)
}

// Observer is told of every recorded evaluation (directive expiry);
// *controlplane.Plane satisfies it.
type Observer interface {
	ObserveEvaluation()
}

// EventRecorder records provenance events (interrupted calls); the control
// plane's stores satisfy it.
type EventRecorder interface {
	AppendEvent(ctx context.Context, e controlplane.Event) error
}

// BreakerConfig configures the per-upstream-host circuit breakers.
type BreakerConfig struct {
	// Failures is how many consecutive failures (a transport error, or a
	// 502, 503 or 504 answer) open a host's breaker (default 5).
	Failures uint32
	// OpenFor is how long an open breaker fails calls fast before one probe
	// call is let through (default 10 s).
	OpenFor time.Duration
}

// Options is what a Proxy is built from. Governor is required; every other
// field has a documented zero value.
type Options struct {
	Governor Governor
	// Recorder is the ledger; nil: the ledger is disabled and responses
	// carry no X-Vigil-Ledger-Seq.
	Recorder Recorder
	// Approvals is the override queue; nil: an escalated call is refused at
	// once (403 governance_escalated without an approval id).
	Approvals Holder
	// Observer is told of each recorded evaluation; nil: nobody.
	Observer Observer
	// Events records interrupted calls; nil: they are only logged.
	Events EventRecorder
	// Tokens maps agent ids to their proxy tokens (Proxy-Authorization).
	Tokens map[string]string
	// DefaultAgent receives the calls without credentials (sidecar mode);
	// "": such calls are answered 407.
	DefaultAgent string
	// HoldTimeout is how long an escalated call is held (default 30 s).
	HoldTimeout time.Duration
	// Rules are the route rules; nil: none.
	Rules *toolcall.Rules
	// CA intercepts HTTPS (CONNECT); nil: each CONNECT is one "connect"
	// action and the tunnel is not inspected.
	CA *CA
	// UpstreamCAs are trusted for upstream TLS besides the system roots;
	// nil: the system roots only.
	UpstreamCAs *x509.CertPool
	// Breaker configures the per-host circuit breakers.
	Breaker BreakerConfig
	// ResponseHeaderTimeout bounds the wait for an upstream's response
	// headers (default 5 minutes: tools may be slow; streams are not bound
	// once their headers arrive).
	ResponseHeaderTimeout time.Duration
	// TracerProvider creates the call spans; nil: no tracing.
	TracerProvider trace.TracerProvider
	// Propagator injects the trace context into forwarded requests and
	// extracts the agent's; nil: W3C trace context.
	Propagator propagation.TextMapPropagator
	// Logger receives the proxy's logs; nil: slog.Default().
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultHoldTimeout           = 30 * time.Second
	DefaultBreakerFailures       = 5
	DefaultBreakerOpenFor        = 10 * time.Second
	DefaultResponseHeaderTimeout = 5 * time.Minute
)

// Proxy is the forward proxy. Create it with New, run it with Serve, stop it
// with Shutdown. Its methods are safe for concurrent use.
type Proxy struct {
	gov       Governor
	recorder  Recorder
	approvals Holder
	observer  Observer
	events    EventRecorder
	tokens    map[string]string
	defAgent  string
	hold      time.Duration
	rules     *toolcall.Rules
	ca        *CA
	log       *slog.Logger
	tracer    trace.Tracer
	prop      propagation.TextMapPropagator

	gp       *goproxy.ProxyHttpServer
	upstream goproxy.RoundTripperFunc // roundTrip, made once (not per call)
	tr       *http.Transport
	dialer   *net.Dialer
	breakers *breakers
	flights  *flights
	sessions *sessions
	stats    counters

	// released ends when Shutdown starts: held calls stop waiting.
	released context.Context
	release  context.CancelFunc

	mu       sync.Mutex // guards srv, stopping, fresh and tunnels
	srv      *http.Server
	stopping bool                  // Shutdown has begun
	fresh    map[net.Conn]struct{} // connections that have not sent a request yet
	tunnels  map[net.Conn]struct{} // hijacked connections (CONNECT)
	pending  sync.Map              // *http.Request (a CONNECT) → *call
}

// New returns a proxy built from opts.
func New(opts Options) (*Proxy, error) {
	if opts.Governor == nil {
		return nil, errors.New("proxy: Options.Governor is required")
	}
	if opts.HoldTimeout < 0 || opts.ResponseHeaderTimeout < 0 || opts.Breaker.OpenFor < 0 {
		return nil, errors.New("proxy: negative duration in Options")
	}
	p := &Proxy{
		gov: opts.Governor, recorder: opts.Recorder, approvals: opts.Approvals, observer: opts.Observer,
		events: opts.Events, tokens: opts.Tokens, defAgent: opts.DefaultAgent, hold: opts.HoldTimeout,
		rules: opts.Rules, ca: opts.CA, log: opts.Logger, prop: opts.Propagator,
		flights: newFlights(), sessions: newSessions(), fresh: map[net.Conn]struct{}{}, tunnels: map[net.Conn]struct{}{},
	}
	if p.hold == 0 {
		p.hold = DefaultHoldTimeout
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.prop == nil {
		p.prop = propagation.TraceContext{}
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	p.tracer = tp.Tracer("github.com/vigilhq/vigil/proxy")
	p.released, p.release = context.WithCancel(context.Background())
	p.dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	p.tr = newTransport(p.dialer, opts.UpstreamCAs, opts.ResponseHeaderTimeout)
	p.breakers = newBreakers(opts.Breaker, p.log)
	p.upstream = p.roundTrip
	p.gp = p.newGoproxy()
	return p, nil
}

// Handler returns the proxy as an http.Handler, for a server the caller
// runs; Serve is the usual way.
func (p *Proxy) Handler() http.Handler { return p.gp }

// Serve accepts proxy connections on ln until Shutdown; it returns
// http.ErrServerClosed after a Shutdown. The proxy speaks plain HTTP on ln
// (agents reach HTTPS tools through CONNECT): it wraps each connection,
// so the http.Server would not see a TLS listener's connections as TLS.
func (p *Proxy) Serve(ln net.Listener) error {
	srv := &http.Server{
		Handler:           p.gp,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		ConnState:         p.trackConn,
	}
	p.mu.Lock()
	if p.srv != nil {
		p.mu.Unlock()
		return errors.New("proxy: Serve called twice")
	}
	p.srv = srv
	p.mu.Unlock()
	return srv.Serve(listener{Listener: ln, p: p})
}

// listener hands out agents' connections that forget themselves when they
// close: a hijacked one (a CONNECT tunnel) gets no further ConnState call
// from the http.Server, and goproxy closes it when the tunnel ends.
type listener struct {
	net.Listener
	p *Proxy
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &agentConn{Conn: c, p: l.p}, nil
}

// agentConn is an agent's connection to the proxy.
type agentConn struct {
	net.Conn
	p *Proxy
}

func (c *agentConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.tunnels, c)
	c.p.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite and CloseRead half-close a TCP connection, as the http.Server
// (before closing after an error) and goproxy's tunnels do with a bare
// *net.TCPConn.
func (c *agentConn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *agentConn) CloseRead() error {
	if hc, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return hc.CloseRead()
	}
	return errors.ErrUnsupported
}

// trackConn remembers the connections the http.Server's Shutdown does not
// end by itself, so that Shutdown can close them: the hijacked ones
// (CONNECT tunnels, until they close), which the http.Server forgets, and
// the fresh ones, on which no request has started. An agent's HTTP client
// may dial a connection it then does not use (a request cancelled while
// dialling leaves its connection in the client's pool); the http.Server
// counts such a connection as busy until it is 5 seconds old. A
// connection that turns up fresh once Shutdown has begun is closed at
// once.
func (p *Proxy) trackConn(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	stopping := p.stopping
	switch {
	case s == http.StateNew && !stopping:
		p.fresh[c] = struct{}{}
	case s == http.StateHijacked:
		delete(p.fresh, c)
		p.tunnels[c] = struct{}{}
	default:
		delete(p.fresh, c)
	}
	p.mu.Unlock()
	if s == http.StateNew && stopping {
		_ = c.Close()
	}
}

// Shutdown stops the proxy: it stops accepting, releases the held calls
// (answered 403 governance_escalated; their approvals stay pending, so the
// agent can retry), closes the connections on which no request has
// started, lets the forwarded calls finish until ctx ends, then closes what
// is left, tunnels included.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.release()
	p.mu.Lock()
	srv := p.srv
	p.stopping = true
	fresh := slices.Collect(maps.Keys(p.fresh))
	clear(p.fresh)
	p.mu.Unlock()
	for _, c := range fresh {
		_ = c.Close()
	}
	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
		if err != nil {
			_ = srv.Close()
		}
	}
	p.mu.Lock()
	tunnels := slices.Collect(maps.Keys(p.tunnels))
	clear(p.tunnels)
	p.mu.Unlock()
	for _, c := range tunnels {
		_ = c.Close() // an agentConn: it takes p.mu
	}
	p.tr.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("proxy: shutdown: %w", err)
	}
	return nil
}

// ApplyOverlays is told of every new set of directive overlays: the
// in-flight calls of each agent that is now quarantined or suspended are
// cancelled (interrupt authority). It does not block on I/O.
func (p *Proxy) ApplyOverlays(o governor.Overlays) {
	for agent, ov := range o {
		if ov != nil && (ov.Quarantined || ov.Suspended) {
			p.interrupt(agent, ov)
		}
	}
}
