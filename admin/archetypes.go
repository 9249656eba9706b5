package admin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// listArchetypes answers GET /v1/archetypes: every accepted archetype name
// and its prior, sorted by name.
func (s *Server) listArchetypes(c *gin.Context) error {
	all := governor.Archetypes()
	out := wire.ArchetypeList{Archetypes: make([]wire.Archetype, len(all))}
	for i, a := range all {
		out.Archetypes[i] = wire.NewArchetype(a)
	}
	return writeJSON(c, http.StatusOK, out)
}
