package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// The fleet view (GET /v1/trajectory/fleet) must answer in bounded time for
// any number of agents, while a policy costs an optimization (about 2 ms of
// one core) and a cold cache, or a busy fleet whose drift keeps changing,
// holds none or old ones for many agents. So it never optimizes on the
// request's path: it peeks at every agent with trajectory.Analyzer.Cached
// (a projection each) and serves each policy labelled current, stale (the
// agent's last policy, computed from earlier drift or thresholds) or
// pending (none yet: strategy and cost null). The agents whose policy is
// not current are handed to a background refresh, at most one per Server,
// which runs Analyze for each of them on runtime.GOMAXPROCS(0) goroutines.
// The request waits for that refresh until Options.FleetBudget has passed
// since it began, then peeks again at those agents: every policy completed
// within the budget is served current (if the first peek alone used up the
// budget, its answer is that peek). A request that finds a refresh
// running does not start another; it waits for that one within its own
// budget, and agents that refresh does not cover are refreshed by a later
// request.

// DefaultFleetBudget is how long the fleet view waits for fresh policies
// when Options.FleetBudget is zero.
const DefaultFleetBudget = 100 * time.Millisecond

// fleetRefresh is the fleet view's background refresh of policies; at most
// one runs per Server.
type fleetRefresh struct {
	mu     sync.Mutex
	done   chan struct{} // closed when the running refresh ends; nil when none runs
	closed atomic.Bool   // Server.Close was called: none starts, the running one stops after its current agents
}

// Close stops the fleet view's background refresh, if one runs, after the
// agents it is analyzing (a few milliseconds), and waits for it; no other
// starts after. Call it once the HTTP server has shut down, before closing
// what the Server reads. A fleet view asked for after Close answers from
// the policies already computed.
func (s *Server) Close() {
	s.refresh.mu.Lock()
	s.refresh.closed.Store(true)
	done := s.refresh.done
	s.refresh.mu.Unlock()
	if done != nil {
		<-done
	}
}

// trajectoryFleet answers GET /v1/trajectory/fleet: every agent's risk level
// and, with the optimizer on, its policy's strategy and expected cost as
// the cache holds them, each labelled with its policy state. The fleet
// view reads no intervention log (past interventions only place markers).
func (s *Server) trajectoryFleet(c *gin.Context) error {
	start := time.Now()
	ctx := c.Request.Context()
	ids := slices.Sorted(slices.Values(s.gov.Agents()))
	as, outdated, err := s.peekFleet(ctx, ids)
	if err != nil {
		return err
	}
	if len(outdated) > 0 {
		done := s.refreshPolicies(ctx, outdated)
		// Wait and peek again only if the first peek left some budget.
		if deadline := start.Add(s.fleetBudget); s.fleetBudget >= 0 && time.Now().Before(deadline) {
			if err := waitRefresh(ctx, done, deadline); err != nil {
				return err
			}
			again, _, err := s.peekFleet(ctx, outdated)
			if err != nil {
				return err
			}
			as = replaceAnalyses(as, outdated, again)
		}
	}
	return writeJSON(c, http.StatusOK, wire.NewFleet(as, s.analyzer.Optimizer()))
}

// peekFleet returns the agents' analyses with the policies the cache holds
// (trajectory.Analyzer.Cached), computed on runtime.GOMAXPROCS(0)
// goroutines, and the ids of those whose policy is not current (stale or
// pending: outdated). Agents
// removed since they were listed are left out; both results keep the order
// of ids. Nothing is optimized.
func (s *Server) peekFleet(ctx context.Context, ids []string) ([]trajectory.Analysis, []string, error) {
	out := make([]trajectory.Analysis, len(ids))
	found := make([]bool, len(ids))
	refresh := make([]bool, len(ids))
	var (
		next     atomic.Int64
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	}
	// peek runs one agent; a panic becomes the call's error (this is not
	// the handler's goroutine, so recoverPanics cannot catch it).
	peek := func(i int) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic analyzing agent %q: %v\n%s", ids[i], r, debug.Stack())
			}
		}()
		thr, history, err := s.driftOf(ids[i])
		if isNotFound(err) {
			return nil // removed since Agents was called
		}
		if err != nil {
			return err
		}
		out[i], refresh[i] = s.analyzer.Cached(ids[i], history, thr, nil)
		found[i] = true
		return nil
	}
	for range min(runtime.GOMAXPROCS(0), len(ids)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) || failed() {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(fmt.Errorf("fleet view abandoned: %w", err))
					return
				}
				if err := peek(i); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, nil, firstErr
	}
	kept := out[:0]
	var outdated []string
	for i, a := range out {
		if !found[i] {
			continue
		}
		kept = append(kept, a)
		if refresh[i] {
			outdated = append(outdated, ids[i])
		}
	}
	return kept, outdated, nil
}

// replaceAnalyses replaces in as the analyses of the agents of peeked by
// their analyses in again; an agent of peeked missing from again was removed
// in between and is left out.
func replaceAnalyses(as []trajectory.Analysis, peeked []string, again []trajectory.Analysis) []trajectory.Analysis {
	redone := make(map[string]bool, len(peeked))
	for _, id := range peeked {
		redone[id] = true
	}
	latest := make(map[string]trajectory.Analysis, len(again))
	for _, a := range again {
		latest[a.AgentID] = a
	}
	out := as[:0]
	for _, a := range as {
		if redone[a.AgentID] {
			n, ok := latest[a.AgentID]
			if !ok {
				continue
			}
			a = n
		}
		out = append(out, a)
	}
	return out
}

// waitRefresh waits until done is closed or deadline has passed; it fails
// only when the request ends first.
func waitRefresh(ctx context.Context, done <-chan struct{}, deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
		return fmt.Errorf("fleet view abandoned: %w", ctx.Err())
	}
	return nil
}

// refreshPolicies starts the background refresh of the agents' policies,
// unless one is running, and returns the done channel of the refresh that
// runs. The refresh is bounded work (the agents given, about 2 ms each per
// core) and is not tied to the request: its context keeps the request's
// values (for the log) but not its cancellation, so a client that gives up
// does not waste the policies computed for it. Server.Close stops it; after
// Close none starts, and the channel returned is already closed.
func (s *Server) refreshPolicies(ctx context.Context, ids []string) <-chan struct{} {
	s.refresh.mu.Lock()
	defer s.refresh.mu.Unlock()
	if s.refresh.done != nil {
		return s.refresh.done
	}
	if s.refresh.closed.Load() {
		none := make(chan struct{})
		close(none)
		return none
	}
	done := make(chan struct{})
	s.refresh.done = done
	go s.runRefresh(context.WithoutCancel(ctx), slices.Clone(ids), done)
	return done
}

// runRefresh analyzes each agent (reading its drift again: it may have
// changed since the peek) on runtime.GOMAXPROCS(0) goroutines, then marks
// the refresh ended and closes done. A panic is logged and ends the
// refresh; a later fleet view starts another.
func (s *Server) runRefresh(ctx context.Context, ids []string, done chan struct{}) {
	start := time.Now()
	defer func() {
		s.refresh.mu.Lock()
		s.refresh.done = nil
		s.refresh.mu.Unlock()
		close(done)
	}()
	var (
		next    atomic.Int64
		stopped atomic.Bool
		wg      sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), len(ids)) {
		wg.Go(func() {
			for !stopped.Load() && !s.refresh.closed.Load() {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				if !s.refreshPolicy(ctx, ids[i]) {
					stopped.Store(true)
				}
			}
		})
	}
	wg.Wait()
	s.log.DebugContext(ctx, "admin: fleet view's policies refreshed", slog.Int("agents", len(ids)),
		slog.Bool("complete", !stopped.Load() && !s.refresh.closed.Load()), slog.Duration("took", time.Since(start)))
}

// refreshPolicy computes one agent's current policy for runRefresh. An
// agent removed since is skipped and an error reading its drift is logged;
// it returns false after a panic, which it logs.
func (s *Server) refreshPolicy(ctx context.Context, id string) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			s.log.ErrorContext(ctx, "admin: recovered panic in the fleet view's policy refresh",
				slog.String("agent_id", id),
				slog.String("panic", fmt.Sprint(r)),
				slog.String("stack", string(debug.Stack())))
			ok = false
		}
	}()
	thr, history, err := s.driftOf(id)
	switch {
	case isNotFound(err):
	case err != nil:
		s.log.WarnContext(ctx, "admin: fleet view's policy refresh skipped an agent",
			slog.String("agent_id", id), slog.String("error", err.Error()))
	default:
		s.analyzer.Analyze(id, history, thr, nil)
	}
	return true
}

// isNotFound reports whether err is a 404 (driftOf's unknown agent).
func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}
