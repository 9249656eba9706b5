package admin

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/governor/trajectory"
	"github.com/vigilhq/vigil/ledger"
)

// Server is the admin API. Its configuration is fixed once New returns and
// it is safe for concurrent use; its one piece of mutable state is the fleet
// view's background refresh of policies (at most one at a time).
type Server struct {
	gov           Governor
	ledger        *ledger.Ledger          // nil: the ledger is disabled
	control       *controlplane.Plane     // nil: no control plane (as if disabled)
	approvals     *controlplane.Approvals // nil: no override queue
	analyzer      *trajectory.Analyzer    // never nil
	fleetBudget   time.Duration           // GET /v1/trajectory/fleet; negative: do not wait
	refresh       fleetRefresh            // the fleet view's background refresh
	interventions InterventionLog         // nil: no past interventions
	keys          *keyring
	info          wire.Info
	playground    bool
	checks        map[string]func(context.Context) error // GET /v1/health
	log           *slog.Logger
	engine        *gin.Engine
}

// route is one endpoint: method and path (Gin syntax), the least role that
// may call it ("" for a public route) and its handler.
type route struct {
	method string
	path   string
	role   Role
	handle handlerFunc
}

// New validates opts and builds the server and its router.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		gov:           opts.Governor,
		ledger:        opts.Ledger,
		control:       opts.Control,
		approvals:     opts.Approvals,
		analyzer:      opts.Trajectory,
		fleetBudget:   cmp.Or(opts.FleetBudget, DefaultFleetBudget),
		interventions: opts.Interventions,
		keys:          newKeyring(opts.Keys),
		info:          newInfo(opts.Info, time.Now()),
		playground:    opts.Playground,
		checks:        maps.Clone(opts.Checks),
		log:           opts.Logger,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.analyzer == nil {
		s.analyzer = trajectory.NewAnalyzer(trajectory.DefaultConfig(), false)
	}
	// Gin's mode is process-wide and its debug mode prints a banner and the
	// route table to stdout, which would corrupt Vigil's JSON log stream. Gin
	// offers no per-router switch, so debug becomes release here; an
	// explicit test mode is left alone.
	if gin.IsDebugging() {
		gin.SetMode(gin.ReleaseMode)
	}
	s.engine = s.router()
	return s, nil
}

// Handler returns the HTTP handler serving every route under /v1.
func (s *Server) Handler() http.Handler { return s.engine }

// routes lists every endpoint of the API; the OpenAPI document describes
// exactly these.
func (s *Server) routes() []route {
	return []route{
		{http.MethodGet, "/v1/health", "", s.health},
		{http.MethodGet, "/v1/info", RoleViewer, s.getInfo},
		{http.MethodGet, "/v1/openapi.json", RoleViewer, s.openAPI},
		{http.MethodPost, "/v1/evaluate", RoleOperator, s.evaluate},
		{http.MethodPost, "/v1/playground/evaluate", RoleOperator, s.playgroundEvaluate},
		{http.MethodGet, "/v1/agents", RoleViewer, s.listAgents},
		{http.MethodGet, "/v1/agents/:agent_id", RoleViewer, s.getAgent},
		{http.MethodPut, "/v1/agents/:agent_id", RoleAdmin, s.putAgent},
		{http.MethodGet, "/v1/archetypes", RoleViewer, s.listArchetypes},
		{http.MethodGet, "/v1/ledger/:agent_id", RoleViewer, s.listEntries},
		{http.MethodGet, "/v1/ledger/:agent_id/latest", RoleViewer, s.latestEntry},
		{http.MethodGet, "/v1/ledger/:agent_id/verify", RoleViewer, s.verifyChain},
		{http.MethodGet, "/v1/ledger/:agent_id/export", RoleViewer, s.exportChain},
		{http.MethodGet, "/v1/ledger/:agent_id/:sequence", RoleViewer, s.getEntry},
		{http.MethodGet, "/v1/ledger/:agent_id/trace/:sequence", RoleViewer, s.traceEntry},
		{http.MethodGet, "/v1/ledger/:agent_id/narrative/:sequence", RoleViewer, s.narrateEntry},
		{http.MethodPost, "/v1/control/directives", RoleOperator, s.issueDirective},
		{http.MethodGet, "/v1/control/directives", RoleViewer, s.listDirectives},
		{http.MethodGet, "/v1/control/directives/:directive_id", RoleViewer, s.getDirective},
		{http.MethodDelete, "/v1/control/directives/:directive_id", RoleOperator, s.expireDirective},
		{http.MethodGet, "/v1/provenance", RoleViewer, s.listProvenance},
		{http.MethodGet, "/v1/approvals", RoleViewer, s.listApprovals},
		{http.MethodPost, "/v1/approvals/:approval_id/approve", RoleOperator, s.approve},
		{http.MethodPost, "/v1/approvals/:approval_id/deny", RoleOperator, s.deny},
		{http.MethodGet, "/v1/trajectory/fleet", RoleViewer, s.trajectoryFleet},
		{http.MethodPost, "/v1/trajectory/simulate", RoleOperator, s.simulateTrajectory},
		{http.MethodGet, "/v1/trajectory/:agent_id", RoleViewer, s.getTrajectory},
		{http.MethodGet, "/v1/trajectory/:agent_id/history", RoleViewer, s.trajectoryHistory},
	}
}

// router builds the Gin engine: panic recovery outermost, then the error
// envelope, the body limit, authentication per route, and the handler.
func (s *Server) router() *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	_ = e.SetTrustedProxies(nil)
	e.Use(s.recoverPanics, s.mapErrors, handle(limitBody))
	for _, r := range s.routes() {
		chain := []gin.HandlerFunc{handle(r.handle)}
		if r.role != "" {
			chain = slices.Insert(chain, 0, handle(s.require(r.role)))
		}
		e.Handle(r.method, r.path, chain...)
	}
	e.NoRoute(handle(noRoute))
	e.NoMethod(handle(noMethod))
	return e
}
