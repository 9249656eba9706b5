package admin

import (
	"encoding/json"
	"fmt"

	"github.com/gin-gonic/gin"
)

// contentTypeJSON is the content type of every response body.
const contentTypeJSON = "application/json; charset=utf-8"

// writeJSON writes v as the JSON response with status. An encoding failure is
// returned before anything is written, so it becomes a 500 envelope.
func writeJSON(c *gin.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	c.Data(status, contentTypeJSON, append(b, '\n'))
	return nil
}

// writeError writes the envelope of e.
func (s *Server) writeError(c *gin.Context, e *apiError) {
	b, err := json.Marshal(e.envelope())
	if err != nil {
		s.log.Error("admin: encode error envelope", "error", err.Error())
		e = errInternal()
		b, _ = json.Marshal(e.envelope())
	}
	c.Data(e.Status, contentTypeJSON, append(b, '\n'))
}
