package admin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor/trajectory"
	"github.com/vigilhq/vigil/ledger"
)

// Role is what an API key may do. Roles are ordered: each includes the
// rights of the ones before it.
type Role string

// The roles, from least to most privileged.
const (
	// RoleViewer may call every GET route.
	RoleViewer Role = "viewer"
	// RoleOperator may also evaluate actions, use the playground, issue
	// and expire directives and decide approvals.
	RoleOperator Role = "operator"
	// RoleAdmin may call every route, including PUT /v1/agents/{agent_id}.
	RoleAdmin Role = "admin"
)

// rank orders the roles; 0 is not a role.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// allows reports whether r includes the rights of need.
func (r Role) allows(need Role) bool { return r.rank() >= need.rank() && r.rank() > 0 }

// Key is one API key: the secret sent in X-Api-Key, the principal it
// authenticates, and its role.
type Key struct {
	Key       string
	Principal string
	Role      Role
}

// Info is what GET /v1/info reports about this instance.
type Info struct {
	// Version is the build version.
	Version string
	// StartedAt is when the process started; the zero value means "when New
	// was called".
	StartedAt time.Time
	// Store is "embedded" or "redis"; "" means "embedded".
	Store               string
	ControlPlaneEnabled bool
	// LedgerEnabled is reported as is; it should equal Options.Ledger != nil.
	LedgerEnabled    bool
	OptimizerEnabled bool
	// ProxyAddress is the forward proxy's listen address (host:port).
	ProxyAddress string
	// Features lists optional features that are on (e.g. "ui", "metrics",
	// "playground").
	Features []string
}

// Options configure a Server.
type Options struct {
	// Governor decides actions and holds agent state. Required.
	Governor Governor
	// Keys are the accepted API keys. Keys must be unique and non-empty;
	// with none, every route but /v1/health answers 401.
	Keys []Key
	// Info is reported by GET /v1/info.
	Info Info
	// Ledger records every decision of POST /v1/evaluate and serves the
	// /v1/ledger routes. Nil means the ledger is disabled
	// (runtime.enable_ledger: false): evaluate answers "ledger": null and
	// every ledger route 404. The caller owns it (and closes its store).
	Ledger *ledger.Ledger
	// Control is the control plane: the /v1/control/directives routes and
	// GET /v1/provenance, and the expiry check that POST /v1/evaluate drives
	// (Plane.ObserveEvaluation). Nil means there is none, which the routes
	// treat as a disabled control plane: POST and DELETE answer 409
	// control_plane_disabled, the list is empty, GET of one directive is 404
	// and provenance lists no events. The caller owns it (runs Plane.Run and
	// closes its store).
	Control *controlplane.Plane
	// Approvals is the override queue (API.md section 9): the /v1/approvals
	// routes, and a pending approval requested for each ESCALATE of POST
	// /v1/evaluate ("approval_id" in the answer). Nil means there is none:
	// the list is empty, approve and deny answer 409
	// control_plane_disabled, and evaluate requests nothing. The caller
	// owns it (runs Approvals.Run and closes its store).
	Approvals *controlplane.Approvals
	// Trajectory analyzes agents' drift for the /v1/trajectory routes and
	// caches their policies; its optimizer switch is what those routes
	// report as optimizer_enabled (keep Info.OptimizerEnabled equal to
	// it). Nil means trajectory.NewAnalyzer(trajectory.DefaultConfig(),
	// false): the routes answer, without costs or policies.
	Trajectory *trajectory.Analyzer
	// FleetBudget is how long GET /v1/trajectory/fleet may wait, from the
	// start of the request, for the background refresh of the policies that
	// are not current (stale or pending) before it answers with what the
	// cache holds, each policy labelled. Zero means DefaultFleetBudget
	// (100 ms); negative means the answer never waits (the refresh still
	// runs, for the next view). A fleet whose mere projection takes longer
	// than the budget is answered after it, without waiting. The per-agent
	// routes always compute the current policy and do not use it.
	FleetBudget time.Duration
	// Interventions lists each agent's past interventions, for the markers
	// of GET /v1/trajectory/{agent_id} and the interventions of its
	// history. Nil means none are known.
	Interventions InterventionLog
	// Playground enables POST /v1/playground/evaluate; when false the route
	// answers 404.
	Playground bool
	// Checks are what GET /v1/health asks, by name ("redis"), on every
	// call: while one returns an error the route answers 503 with status
	// "degraded" and, per check, "ok" or the error's message. The route is
	// public, so the messages should name the problem, not addresses or
	// secrets ("circuit open"). Each is called with the request's context
	// and should return quickly. Nil or empty: always 200 "ok".
	Checks map[string]func(context.Context) error
	// Logger receives internal errors and recovered panics; nil discards.
	Logger *slog.Logger
}

// Validate reports every problem of o: a missing governor, empty, duplicate
// or unprincipled keys, unknown roles, an unknown store. Key values are never
// part of the message.
func (o *Options) Validate() error {
	var errs []error
	if o.Governor == nil {
		errs = append(errs, errors.New("admin: options: governor is required"))
	}
	seen := map[[sha256.Size]byte]int{}
	for i, k := range o.Keys {
		field := fmt.Sprintf("admin: options: api_keys[%d]", i)
		if k.Key == "" {
			errs = append(errs, fmt.Errorf("%s.key: must not be empty", field))
		} else {
			d := sha256.Sum256([]byte(k.Key))
			if j, dup := seen[d]; dup {
				errs = append(errs, fmt.Errorf("%s.key: duplicate of api_keys[%d].key", field, j))
			} else {
				seen[d] = i
			}
		}
		if strings.TrimSpace(k.Principal) == "" {
			errs = append(errs, fmt.Errorf("%s.principal: must not be empty", field))
		}
		if k.Role.rank() == 0 {
			errs = append(errs, fmt.Errorf("%s.role: unknown role %q (want viewer, operator or admin)", field, k.Role))
		}
	}
	for name, check := range o.Checks {
		if strings.TrimSpace(name) == "" {
			errs = append(errs, errors.New("admin: options: checks: empty check name"))
		}
		if check == nil {
			errs = append(errs, fmt.Errorf("admin: options: checks[%q]: nil check", name))
		}
	}
	switch o.Info.Store {
	case "", "embedded", "redis":
	default:
		errs = append(errs, fmt.Errorf("admin: options: info.store: unknown store %q (want embedded or redis)", o.Info.Store))
	}
	return errors.Join(errs...)
}
