package admin

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
)

// maxBodyBytes is the largest request body accepted (1 MiB).
const maxBodyBytes = 1 << 20

// handlerFunc is a handler or middleware of this package: it returns an error
// instead of writing one, and mapErrors writes the envelope.
type handlerFunc func(c *gin.Context) error

// handle adapts h to Gin: an error is recorded on the context and the chain
// is stopped.
func handle(h handlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			_ = c.Error(err)
			c.Abort()
		}
	}
}

// recoverPanics turns a panic anywhere below it into a 500 internal envelope.
// The panic value and stack are logged, never sent. http.ErrAbortHandler is
// re-raised: it is net/http's way to abort a response on purpose.
func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if r == http.ErrAbortHandler {
			panic(r)
		}
		s.log.Error("admin: recovered panic in handler",
			slog.String("method", c.Request.Method),
			slog.String("path", c.Request.URL.Path),
			slog.String("panic", fmt.Sprint(r)),
			slog.String("stack", string(debug.Stack())))
		c.Abort()
		if !c.Writer.Written() {
			s.writeError(c, errInternal())
		}
	}()
	c.Next()
}

// mapErrors writes the envelope for the last error recorded by a handler or
// middleware, unless a response was already written.
func (s *Server) mapErrors(c *gin.Context) {
	c.Next()
	if len(c.Errors) == 0 || c.Writer.Written() {
		return
	}
	err := c.Errors.Last().Err
	ae, internal := toAPIError(err)
	if internal || ae.cause != nil {
		attrs := []any{
			slog.String("method", c.Request.Method),
			slog.String("path", c.Request.URL.Path),
			slog.String("error", err.Error()),
		}
		if p, ok := principalFrom(c.Request.Context()); ok {
			attrs = append(attrs, slog.String("principal", p.Name))
		}
		msg := "admin: internal error"
		if !internal {
			msg = "admin: " + ae.Code
		}
		s.log.Error(msg, attrs...)
	}
	s.writeError(c, ae)
}

// limitBody refuses a body declared larger than maxBodyBytes and caps the
// rest, so that reading past the limit fails with *http.MaxBytesError.
func limitBody(c *gin.Context) error {
	if c.Request.ContentLength > maxBodyBytes {
		return errTooLarge()
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBodyBytes)
	return nil
}

// noRoute answers a path that matches no route.
func noRoute(c *gin.Context) error {
	return errNotFound("no route %s %s", c.Request.Method, c.Request.URL.Path)
}

// noMethod answers a known path called with a method it does not serve; Gin
// has set the Allow header.
func noMethod(c *gin.Context) error {
	return &apiError{Status: http.StatusMethodNotAllowed, Code: wire.CodeMethodNotAllowed,
		Message: fmt.Sprintf("%s is not allowed on %s (allowed: %s)", c.Request.Method, c.Request.URL.Path, c.Writer.Header().Get("Allow"))}
}
