package admin

import (
	_ "embed"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
)

// openAPIDocument is the hand-written OpenAPI 3.1 description of every
// route; a test keeps it in step with routes().
//
//go:embed openapi.json
var openAPIDocument []byte

// newInfo fills in the documented defaults of info: the store "embedded",
// the start time now, an empty feature list.
func newInfo(info Info, now time.Time) wire.Info {
	store := info.Store
	if store == "" {
		store = "embedded"
	}
	started := info.StartedAt
	if started.IsZero() {
		started = now
	}
	features := slices.Clone(info.Features)
	if features == nil {
		features = []string{}
	}
	return wire.Info{
		Name:                "vigil",
		Version:             info.Version,
		StartedAt:           wire.Time(started),
		Store:               store,
		ControlPlaneEnabled: info.ControlPlaneEnabled,
		LedgerEnabled:       info.LedgerEnabled,
		OptimizerEnabled:    info.OptimizerEnabled,
		ProxyAddress:        info.ProxyAddress,
		Features:            features,
	}
}

// health answers GET /v1/health: 200 "ok", or 503 "degraded" with every
// check's result while one of Options.Checks fails.
func (s *Server) health(c *gin.Context) error {
	var results map[string]string
	failed := false
	for name, check := range s.checks {
		msg := "ok"
		if err := check(c.Request.Context()); err != nil {
			msg, failed = err.Error(), true
		}
		if results == nil {
			results = make(map[string]string, len(s.checks))
		}
		results[name] = msg
	}
	if failed {
		return writeJSON(c, http.StatusServiceUnavailable, wire.Health{Status: "degraded", Checks: results})
	}
	return writeJSON(c, http.StatusOK, wire.Health{Status: "ok"})
}

// getInfo answers GET /v1/info.
func (s *Server) getInfo(c *gin.Context) error {
	return writeJSON(c, http.StatusOK, s.info)
}

// openAPI answers GET /v1/openapi.json with the embedded document.
func (s *Server) openAPI(c *gin.Context) error {
	c.Data(http.StatusOK, contentTypeJSON, openAPIDocument)
	return nil
}
