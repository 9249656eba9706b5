package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/ledger"
)

// Limits of the ledger routes' query parameters: larger values are clamped
// to the maximum; zero, negative and non-integer values are 400.
const (
	defaultTraceDepth = 10
	maxTraceDepth     = 1000
	defaultListLimit  = 50
	maxListLimit      = 1000
)

// Content types of the ledger routes that do not answer JSON.
const (
	contentTypeText   = "text/plain; charset=utf-8"
	contentTypeNDJSON = "application/x-ndjson"
)

// msgLedgerDisabled is the 404 message of every ledger route when the server
// has no ledger.
const msgLedgerDisabled = "the ledger is disabled (runtime.enable_ledger: false)"

// msgLedgerUnavailable is the 503 message of a ledger store failure.
const msgLedgerUnavailable = "the ledger store is unavailable; the cause is in the server log"

// verdicts are the accepted values of ?verdict=.
var verdicts = []string{"ALLOW", "DENY", "ESCALATE", "MODIFY", "SUSPEND"}

// ledgerOn returns the ledger, or the 404 of a server without one.
func (s *Server) ledgerOn() (*ledger.Ledger, error) {
	if s.ledger == nil {
		return nil, errNotFound(msgLedgerDisabled)
	}
	return s.ledger, nil
}

// getEntry answers GET /v1/ledger/{agent_id}/{sequence}: one entry, as
// stored.
func (s *Server) getEntry(c *gin.Context) error {
	l, err := s.ledgerOn()
	if err != nil {
		return err
	}
	id := c.Param("agent_id")
	seq, err := pathSequence(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	rec, err := l.Get(ctx, id, seq)
	if err != nil {
		return s.ledgerReadError(ctx, err, id, seq)
	}
	c.Data(http.StatusOK, contentTypeJSON, append(rec.JSON(), '\n'))
	return nil
}

// latestEntry answers GET /v1/ledger/{agent_id}/latest: the newest entry.
func (s *Server) latestEntry(c *gin.Context) error {
	l, err := s.ledgerOn()
	if err != nil {
		return err
	}
	id := c.Param("agent_id")
	ctx := c.Request.Context()
	rec, err := l.Latest(ctx, id)
	if err != nil {
		return s.ledgerReadError(ctx, err, id, 0)
	}
	c.Data(http.StatusOK, contentTypeJSON, append(rec.JSON(), '\n'))
	return nil
}

// listEntries answers GET /v1/ledger/{agent_id}?verdict=V&limit=N: entries
// newest first.
func (s *Server) listEntries(c *gin.Context) error {
	l, err := s.ledgerOn()
	if err != nil {
		return err
	}
	id := c.Param("agent_id")
	verdict, given := c.GetQuery("verdict")
	if given && !slices.Contains(verdicts, verdict) {
		return errInvalid("verdict", "unknown verdict %q (want %s)", verdict, strings.Join(verdicts, ", "))
	}
	limit, err := queryCount(c, "limit", defaultListLimit, maxListLimit)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	recs, err := l.List(ctx, id, verdict, limit)
	if err != nil {
		return s.ledgerReadError(ctx, err, id, 0)
	}
	if len(recs) == 0 {
		if err := s.requireAgent(ctx, id); err != nil {
			return err
		}
	}
	return writeEntries(c, wire.NewLedgerEntries(id, recs))
}

// traceEntry answers GET /v1/ledger/{agent_id}/trace/{sequence}?depth=N: the
// entry and the entries its causal links lead to, at most depth in all.
func (s *Server) traceEntry(c *gin.Context) error {
	l, err := s.ledgerOn()
	if err != nil {
		return err
	}
	id := c.Param("agent_id")
	seq, err := pathSequence(c)
	if err != nil {
		return err
	}
	depth, err := queryCount(c, "depth", defaultTraceDepth, maxTraceDepth)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	recs, err := l.Trace(ctx, id, seq, depth)
	if err != nil {
		return s.ledgerReadError(ctx, err, id, seq)
	}
	return writeEntries(c, wire.NewLedgerTrace(id, seq, recs))
}

// narrateEntry answers GET /v1/ledger/{agent_id}/narrative/{sequence}: the
// plain-text account of one entry.
func (s *Server) narrateEntry(c *gin.Context) error {
	l, err := s.ledgerOn()
	if err != nil {
		return err
	}
	id := c.Param("agent_id")
	seq, err := pathSequence(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	text, err := l.Narrative(ctx, id, seq)
	if err != nil {
		return s.ledgerReadError(ctx, err, id, seq)
	}
	c.Data(http.StatusOK, contentTypeText, []byte(text))
	return nil
}

// verifyChain answers GET /v1/ledger/{agent_id}/verify. A broken chain is an
// answer (200, valid false), not an error.
func (s *Server) verifyChain(c *gin.Context) error {
	l, err := s.ledgerOn()
	if err != nil {
		return err
	}
	id := c.Param("agent_id")
	ctx := c.Request.Context()
	report, err := l.Verify(ctx, id)
	if err != nil && !errors.Is(err, ledger.ErrChainBroken) {
		return s.ledgerReadError(ctx, err, id, 0)
	}
	if report.AgentID == "" {
		report.AgentID = id
	}
	if report.Valid && report.Entries == 0 {
		if err := s.requireAgent(ctx, id); err != nil {
			return err
		}
	}
	return writeJSON(c, http.StatusOK, wire.NewLedgerReport(report))
}

// exportChain answers GET /v1/ledger/{agent_id}/export: the chain as JSON
// Lines, oldest first, streamed. Failures before the first byte is sent are
// error envelopes; a failure after it cuts the connection (the chunked body
// then ends without its terminating chunk), so a client never mistakes a
// truncated export for a complete one.
func (s *Server) exportChain(c *gin.Context) error {
	l, err := s.ledgerOn()
	if err != nil {
		return err
	}
	id := c.Param("agent_id")
	ctx := c.Request.Context()
	head, err := l.Head(ctx, id)
	if err != nil {
		return s.ledgerReadError(ctx, err, id, 0)
	}
	if head.Sequence == 0 {
		if err := s.requireAgent(ctx, id); err != nil {
			return err
		}
	}
	// A whole chain can take longer than the server's write timeout; the
	// export is a bounded read of our own store, so lift the deadline for
	// this response only (the read side stays bounded by the server).
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Time{})
	h := c.Writer.Header()
	h.Set("Content-Type", contentTypeNDJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	c.Status(http.StatusOK)
	err = l.Export(ctx, id, c.Writer)
	if err == nil {
		c.Writer.WriteHeaderNow() // an empty chain is an empty 200 body
		return nil
	}
	if !c.Writer.Written() {
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		return s.ledgerReadError(ctx, err, id, 0)
	}
	s.log.Warn("admin: ledger export cut short", slog.String("agent_id", id), slog.String("error", err.Error()))
	panic(http.ErrAbortHandler)
}

// pathSequence reads the {sequence} path parameter: an integer from 1. A
// number too large for int64 names no entry and reads as the largest one.
func pathSequence(c *gin.Context) (int64, error) {
	raw := c.Param("sequence")
	n, err := strconv.ParseInt(raw, 10, 64)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(raw, "-") {
		return 1<<63 - 1, nil
	}
	if err != nil || n < 1 {
		return 0, errInvalid("sequence", "sequence must be an integer from 1, got %q", raw)
	}
	return n, nil
}

// queryCount reads an optional positive integer query parameter: def when
// absent, clamped to max; zero, negative, empty or non-integer is 400.
func queryCount(c *gin.Context, name string, def, max int) (int, error) {
	raw, given := c.GetQuery(name)
	if !given {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(raw, "-") {
		return max, nil
	}
	if err != nil || n < 1 {
		return 0, errInvalid(name, "%s must be a positive integer (at most %d is used), got %q", name, max, raw)
	}
	return int(min(n, int64(max))), nil
}

// requireAgent answers 404 unless the agent is known: registered with the
// governor or with entries in the ledger.
func (s *Server) requireAgent(ctx context.Context, id string) error {
	known, err := s.agentKnown(ctx, id)
	if err != nil {
		return err
	}
	if !known {
		return errNotFound("no agent %q", id)
	}
	return nil
}

func (s *Server) agentKnown(ctx context.Context, id string) (bool, error) {
	if slices.Contains(s.gov.Agents(), id) {
		return true, nil
	}
	head, err := s.ledger.Head(ctx, id)
	if err != nil {
		return false, errUnavailable(err, msgLedgerUnavailable)
	}
	return head.Sequence > 0, nil
}

// ledgerReadError maps a ledger read failure: not found is a 404 naming what
// is missing (the agent, or its entry seq; 0 means "any entry"), anything
// else a 503 whose cause is logged.
func (s *Server) ledgerReadError(ctx context.Context, err error, id string, seq int64) error {
	if !errors.Is(err, ledger.ErrNotFound) {
		return errUnavailable(err, msgLedgerUnavailable)
	}
	if err := s.requireAgent(ctx, id); err != nil {
		return err
	}
	if seq == 0 {
		return errNotFound("agent %q has no ledger entries", id)
	}
	return errNotFound("agent %q has no ledger entry %d", id, seq)
}

// writeEntries writes a body holding stored entries (json.RawMessage)
// without HTML escaping, so that the entries keep their stored bytes.
func writeEntries(c *gin.Context, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	c.Data(http.StatusOK, contentTypeJSON, b.Bytes())
	return nil
}
