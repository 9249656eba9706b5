package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/ledger"
)

// snapshotFlushTimeout bounds the last save of the agents' state at
// shutdown.
const snapshotFlushTimeout = 10 * time.Second

// withSnapshots restores the agents' state (trust, fingerprint, window,
// drift history) from the control plane's store — DATA_DIR/controlplane/
// agents, or the Redis hash — and keeps it saved behind the hot path until
// ctx ends: every controlplane.DefaultSnapshotInterval, the agents whose
// state changed. It returns next preceded by the end of the snapshotter and
// a last save of what changed (Flush), so that serve's stop of the control
// plane, which runs before the stores close, saves the state too; the
// returned function may be called more than once.
//
// Without a control plane store (runtime.enable_control_plane: false)
// nothing is persisted. A store that cannot list the snapshots at start
// leaves the agents fresh and persists nothing in this run, so that the
// stored state is not overwritten; a snapshot that cannot be restored is
// logged and skipped.
func withSnapshots(ctx context.Context, st *stores, engine *governor.Engine, log *slog.Logger, next func()) (stop func()) {
	store, ok := st.control.(controlplane.SnapshotStore)
	if !ok {
		log.Info("agent state is not persisted across restarts: the control plane is disabled")
		return next
	}
	snap, err := controlplane.NewSnapshotter(engine, store, 0, log)
	if err != nil {
		log.Error("agent state is not persisted", "err", err)
		return next
	}
	res, err := snap.RestoreAll(ctx)
	if err != nil {
		log.Error("agent state not restored; the agents start afresh and their state is not persisted in this run", "err", err)
		return next
	}
	log.Info("agent state restored", "agents", res.Restored, "unknown_agents", res.Unknown, "unreadable", res.Failed)
	return inBackground(ctx, func(ctx context.Context) { _ = snap.Run(ctx) }, func() {
		fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), snapshotFlushTimeout)
		defer fcancel()
		if n, err := snap.Flush(fctx); err != nil {
			log.Error("agent state not saved at shutdown", "saved", n, "err", err)
		} else {
			log.Info("agent state saved", "agents", n)
		}
	}, next)
}

// The messages of the "redis" health check; GET /v1/health is public, so
// they carry no address.
var (
	errCircuitOpen      = errors.New("circuit open")
	errRedisUnreachable = errors.New("unreachable")
)

// healthChecks returns the checks of GET /v1/health: in Redis mode,
// "redis", which pings Redis through the control plane store's circuit
// breaker (and so is its probe when half-open), and "ledger", degraded
// while entries wait in the ledger's local spool; none in embedded mode.
func healthChecks(st *stores, led *ledger.Ledger) map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{}
	if rs, ok := st.control.(*controlplane.RedisStore); ok {
		checks["redis"] = func(ctx context.Context) error {
			err := rs.Check(ctx)
			switch {
			case err == nil:
				return nil
			case errors.Is(err, controlplane.ErrUnavailable):
				return errCircuitOpen
			}
			return errRedisUnreachable
		}
	}
	if led != nil && st.spool != nil {
		checks["ledger"] = func(context.Context) error {
			if n := led.Spooled(); n > 0 {
				return fmt.Errorf("%d entries wait in the local spool for the ledger store", n)
			}
			return nil
		}
	}
	if len(checks) == 0 {
		return nil
	}
	return checks
}
