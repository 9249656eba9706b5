package main

import (
	"context"
	"log/slog"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor"
)

// withApprovals creates the override queue (API.md section 9) over the
// control plane's store — DATA_DIR/controlplane/approvals.ndjson, or the
// Redis keys every sidecar on that Redis shares — granting approved actions
// to engine, and runs it until ctx ends: pending approvals expire after
// their hold window (10 minutes) and, on Redis, the decisions made on other
// sidecars are granted here too. It returns the queue and next preceded by
// the end of the queue's Run, so that serve's stop of the control plane,
// which runs before the stores close, stops it too; the returned function
// may be called more than once.
//
// Without a control plane store (runtime.enable_control_plane: false) there
// is no queue: escalations get no approval and the approve and deny routes
// answer 409 control_plane_disabled.
func withApprovals(ctx context.Context, st *stores, engine *governor.Engine, log *slog.Logger, next func()) (*controlplane.Approvals, func()) {
	store, ok := st.control.(controlplane.ApprovalStore)
	if !ok {
		log.Info("no override queue: the control plane is disabled; escalated actions get no approval")
		return nil, next
	}
	q, err := controlplane.NewApprovals(controlplane.DefaultApprovalConfig(), store, st.control, engine, controlplane.WithApprovalLogger(log))
	if err != nil {
		log.Error("no override queue; escalated actions get no approval", "err", err)
		return nil, next
	}
	return q, inBackground(ctx, q.Run, nil, next)
}
