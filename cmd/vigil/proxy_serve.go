package main

import (
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/ledger"
	"github.com/vigilhq/vigil/proxy"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// proxyDeps is what the forward proxy is wired to; nil fields are disabled
// subsystems.
type proxyDeps struct {
	engine    *governor.Engine
	ledger    *ledger.Ledger
	approvals *controlplane.Approvals
	plane     *controlplane.Plane
	events    proxy.EventRecorder
	tracer    trace.TracerProvider
	log       *slog.Logger
}

// buildProxy creates the forward proxy of the configuration (API.md
// sections 4 and 7): agent tokens, the default agent, the hold time, the
// route rules, the interception CA and the extra upstream CAs.
func buildProxy(cfg *fileConfig, d proxyDeps) (*proxy.Proxy, error) {
	rules, err := toolcall.NewRules(cfg.routes())
	if err != nil {
		return nil, err
	}
	opts := proxy.Options{
		Governor: d.engine, Tokens: cfg.agentTokens(), DefaultAgent: cfg.Proxy.DefaultAgent,
		HoldTimeout: cfg.holdTimeout(), Rules: rules, TracerProvider: d.tracer, Logger: d.log,
	}
	// Typed nils must not become non-nil interfaces.
	if d.ledger != nil {
		opts.Recorder = d.ledger
	}
	if d.approvals != nil {
		opts.Approvals = d.approvals
	}
	if d.plane != nil {
		opts.Observer = d.plane
	}
	if d.events != nil {
		opts.Events = d.events
	}
	if dir := cfg.Proxy.CADir; dir != "" {
		if opts.CA, err = proxy.LoadCA(dir); err != nil {
			return nil, fmt.Errorf("proxy.ca_dir: %w", err)
		}
	}
	if f := cfg.Proxy.UpstreamCAFile; f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("proxy.upstream_ca_file: %w", err)
		}
		if opts.UpstreamCAs, err = proxy.UpstreamPool(pem); err != nil {
			return nil, fmt.Errorf("proxy.upstream_ca_file %s: %w", f, err)
		}
	}
	return proxy.New(opts)
}

// routes returns the route rules of the configuration (already validated).
func (c *fileConfig) routes() []toolcall.Route {
	out := make([]toolcall.Route, 0, len(c.Routes))
	for _, r := range c.Routes {
		rev, _ := governor.ParseReversibility(r.Reversibility)
		out = append(out, toolcall.Route{
			Host: r.Match.Host, Method: r.Match.Method, Path: r.Match.Path,
			Action: r.Action, Target: r.Target, Reversibility: rev,
			Modify: toolcall.Modification{SetQuery: r.Modify.SetQuery, SetHeaders: r.Modify.SetHeaders},
		})
	}
	return out
}

// overlaySink publishes the control plane's overlays to the governor and
// then to the proxy, which interrupts the in-flight calls of quarantined
// and suspended agents. The proxy is set once it is built (the plane
// publishes before: no call is in flight then).
type overlaySink struct {
	engine *governor.Engine
	proxy  atomic.Pointer[proxy.Proxy]
}

func (s *overlaySink) SetOverlays(o governor.Overlays) {
	s.engine.SetOverlays(o)
	if p := s.proxy.Load(); p != nil {
		p.ApplyOverlays(o)
	}
}
