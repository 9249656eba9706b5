package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
	"github.com/vigilhq/vigil/ledger"
)

// shutdownGrace bounds how long in-flight admin requests may take to finish
// after SIGTERM.
const shutdownGrace = 30 * time.Second

// serve runs `vigil serve` until ctx is cancelled (SIGTERM, SIGINT).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("vigil serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML configuration `file` (optional: built-in defaults without one)")
	flags := defaultServeSettings()
	flags.registerFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vigil serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	cfg, err := loadConfig(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "vigil serve: %v\n", err)
		return 1
	}
	settings := cfg.serveSettings(fs, flags, getenv)
	if err := settings.validate(); err != nil {
		fmt.Fprintf(stderr, "vigil serve: %v\n", err)
		return 1
	}
	for name, on := range map[string]bool{"--ui": settings.UI, "--metrics": settings.Metrics, "--sim-mode": settings.SimMode} {
		if on {
			log.Warn("feature not available in this version yet; flag ignored", "flag", name)
		}
	}

	engine, err := buildGovernor(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "vigil serve: %v\n", err)
		return 1
	}
	st, err := openStores(ctx, settings, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "vigil serve: %v\n", err)
		return 1
	}
	defer func() {
		if err := st.close(); err != nil {
			log.Error("closing stores", "err", err)
		}
	}()
	var led *ledger.Ledger
	if st.ledger != nil {
		if st.spool != nil {
			// Read before the replayer starts, which may drain it at once.
			if n := st.spool.Pending(); n > 0 {
				log.Warn("ledger: entries from an earlier run wait in the local spool; they are replayed into Redis", "entries", n)
			}
		}
		led = ledger.NewWithOptions(st.ledger, ledger.Options{Spool: st.spool, Logger: log})
		defer led.Close() // stops the spool's replayer before the stores close
		if fs, ok := st.ledger.(*ledger.FileStore); ok {
			r := fs.Recovery()
			log.Info("ledger opened", "records", r.Records, "torn_tail_bytes_cut", r.TruncatedBytes,
				"durability", cmp.Or(cfg.Ledger.Durability, "sync"))
		}
	}
	tp, stopTracing, err := setupTracing(ctx, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "vigil serve: %v\n", err)
		return 1
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			log.Error("flushing traces", "err", err)
		}
	}()
	sink := &overlaySink{engine: engine}
	plane, err := buildControlPlane(st, engine, sink, log)
	if err != nil {
		fmt.Fprintf(stderr, "vigil serve: %v\n", err)
		return 1
	}
	// The plane's expiry timer (and, on Redis, its watch of the shared
	// directives) runs until serve's context ends; stopPlane ends it and
	// waits, and must run before the stores close (the defer runs before
	// the one above on every early return).
	stopPlane := startControlPlane(ctx, plane)
	stopPlane = withSnapshots(ctx, st, engine, log, stopPlane) // agent state: restored now, saved until stopPlane
	// The override queue (approvals), run until stopPlane.
	approvals, stopPlane := withApprovals(ctx, st, engine, log, stopPlane)
	defer stopPlane()
	// The trajectory engine: one analyzer (and its policy cache) shared by
	// the routes and the periodic intervention check.
	analyzer := trajectory.NewAnalyzer(cfg.trajectoryConfig(), cfg.optimizerEnabled())
	iv := &interventions{mode: parseInterventions(cfg.Optimizer.Interventions), engine: engine, analyzer: analyzer,
		plane: plane, log: log, last: map[string]trajectory.Intervention{}}
	if st.control != nil {
		iv.events = st.control
	}
	stopPlane = withInterventions(ctx, iv, cfg.checkInterval(), stopPlane)
	deps := proxyDeps{engine: engine, ledger: led, approvals: approvals, plane: plane, tracer: tp, log: log}
	if st.control != nil {
		deps.events = st.control
	}
	fwd, err := buildProxy(cfg, deps)
	if err != nil {
		fmt.Fprintf(stderr, "vigil serve: %v\n", err)
		return 1
	}
	sink.proxy.Store(fwd)
	keys := apiKeys(cfg, getenv)
	if len(keys) == 0 {
		log.Warn("no API keys configured (api_keys or VIGIL_API_KEY): every /v1 route but /v1/health answers 401")
	}
	started := time.Now().UTC()
	api, err := admin.New(admin.Options{
		Governor: engine,
		Keys:     keys,
		Info: admin.Info{
			Version: version, StartedAt: started, Store: st.storeName(),
			ControlPlaneEnabled: plane != nil, LedgerEnabled: led != nil, OptimizerEnabled: cfg.optimizerEnabled(),
			ProxyAddress: net.JoinHostPort(settings.ProxyHost, strconv.Itoa(settings.ProxyPort)),
			Features:     features(settings, led != nil, plane != nil),
		},
		Playground:    settings.Playground,
		Checks:        healthChecks(st, led),
		Ledger:        led,
		Control:       plane,
		Approvals:     approvals,
		Trajectory:    analyzer,
		FleetBudget:   admin.DefaultFleetBudget,
		Interventions: iv,
		Logger:        log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "vigil serve: %v\n", err)
		return 1
	}

	addr := net.JoinHostPort(settings.Host, strconv.Itoa(settings.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "vigil serve: admin API: %v\n", err)
		return 1
	}
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	proxyAddr := net.JoinHostPort(settings.ProxyHost, strconv.Itoa(settings.ProxyPort))
	pln, err := net.Listen("tcp", proxyAddr)
	if err != nil {
		_ = ln.Close()
		fmt.Fprintf(stderr, "vigil serve: forward proxy: %v\n", err)
		return 1
	}
	served := make(chan error, 1)
	proxied := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	go func() { proxied <- fwd.Serve(pln) }()
	log.Info("vigil serving", "version", version, "admin", ln.Addr().String(), "proxy", pln.Addr().String(), "store", st.storeName(), "ledger", led != nil,
		"control_plane", plane != nil, "agents", len(engine.Agents()), "rules", len(engine.Rules()), "playground", settings.Playground)

	select {
	case err := <-served:
		log.Error("admin API stopped", "err", err)
		return 1
	case err := <-proxied:
		log.Error("forward proxy stopped", "err", err)
		return 1
	case <-ctx.Done():
	}
	// Shutdown order (ARCHITECTURE.md): stop accepting; release the held
	// calls and let the forwarded ones finish (each has its ledger entry
	// already); finish the admin requests and stop the fleet view's
	// background refresh; wait for the control plane's Run, which ends with
	// ctx; then close the stores: flush and close the
	// ledger, close the control plane's store, then Redis; last, flush the
	// traces (deferred above).
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := fwd.Shutdown(sctx); err != nil {
		log.Error("forward proxy shutdown", "err", err)
	}
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("admin API shutdown", "err", err)
		return 1
	}
	api.Close()
	stopPlane()
	if err := st.close(); err != nil {
		log.Error("closing stores", "err", err)
		return 1
	}
	log.Info("stopped cleanly")
	return 0
}

// buildGovernor creates the engine and installs the contracts and rules of
// the configuration (already validated).
func buildGovernor(cfg *fileConfig) (*governor.Engine, error) {
	var opts []governor.Option
	if !cfg.ledgerEnabled() {
		opts = append(opts, governor.WithoutTrace()) // no ledger: no trace to keep
	}
	engine, err := governor.New(governor.DefaultConfig(), opts...)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.contracts() {
		if err := engine.SetContract(c); err != nil {
			return nil, fmt.Errorf("agent %s: %w", c.AgentID, err)
		}
	}
	if err := engine.SetRules(cfg.rules()); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return engine, nil
}

// buildControlPlane creates the control plane over the engine and the
// store st opened for it; with none (runtime.enable_control_plane: false)
// there is no plane. An enabled plane loads the stored directives, expires
// those that came due while the process was down and puts the rest in force
// before the API serves.
func buildControlPlane(st *stores, engine *governor.Engine, sink controlplane.Sink, log *slog.Logger) (*controlplane.Plane, error) {
	if st.control == nil {
		return nil, nil
	}
	plane, err := controlplane.New(controlplane.DefaultConfig(), engine, sink, st.control, controlplane.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	return plane, nil
}

// startControlPlane runs plane.Run in a goroutine until ctx ends or the
// returned stop is called; stop waits for Run to return and may be called
// more than once. A nil plane runs nothing.
func startControlPlane(ctx context.Context, plane *controlplane.Plane) (stop func()) {
	if plane == nil {
		return func() {}
	}
	return inBackground(ctx, plane.Run, nil, func() {})
}

// inBackground runs run on its own goroutine until ctx ends or the
// returned stop is called. stop cancels run and waits for it, then calls
// after (once; nil for nothing) and next (every time): serve chains the
// background loops so that one call stops them all, in order, before the
// stores close. stop may be called more than once.
func inBackground(ctx context.Context, run func(context.Context), after, next func()) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(runCtx)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			if after != nil {
				after()
			}
		})
		next()
	}
}

// apiKeys returns the configured keys plus VIGIL_API_KEY (an admin key whose
// principal is "env") when it is set.
func apiKeys(cfg *fileConfig, getenv func(string) string) []admin.Key {
	var keys []admin.Key
	for _, k := range cfg.APIKeys {
		keys = append(keys, admin.Key{Key: k.Key, Principal: k.Principal, Role: admin.Role(k.Role)})
	}
	if getenv != nil {
		if k := getenv("VIGIL_API_KEY"); k != "" {
			keys = append(keys, admin.Key{Key: k, Principal: "env", Role: admin.RoleAdmin})
		}
	}
	return keys
}

// features lists what this process serves, for GET /v1/info.
func features(s serveSettings, ledgerOn, controlOn bool) []string {
	f := []string{"proxy", "evaluate", "agents", "archetypes"}
	if ledgerOn {
		f = append(f, "ledger")
	}
	if controlOn {
		f = append(f, "control_plane")
	}
	f = append(f, "trajectory")
	if s.Playground {
		f = append(f, "playground")
	}
	return f
}
