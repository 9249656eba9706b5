package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/governor"
)

// Plane is the control plane: it issues and expires directives, resolves
// their targets, publishes the overlays they make to the governor and
// records provenance. Its methods are safe for concurrent use.
type Plane struct {
	cfg   Config
	fleet Fleet
	sink  Sink
	store Store
	clock func() time.Time
	log   *slog.Logger

	evals atomic.Uint64
	// nextDue is the earliest ExpiresAt of an active directive, in Unix
	// nanoseconds (math.MaxInt64: none), so that ObserveEvaluation can tell
	// without a lock that nothing is due.
	nextDue atomic.Int64

	mu       sync.Mutex // guards the directives; held while publishing
	all      map[string]*Directive
	active   []*Directive // oldest first
	compiled map[string][]*governor.Invariant
	// gen counts the changes to the directives in memory, so that Reload
	// can tell whether one happened while it read the store.
	gen uint64
}

// New returns a plane reading the agents of fleet, publishing overlays to
// sink and keeping directives and events in store (see DefaultConfig). An
// enabled plane loads the stored directives, expires those that came due
// while the process was down, and publishes the overlays of the rest, so a
// restarted process enforces what was active. A disabled plane touches
// neither the store nor the sink.
func New(cfg Config, fleet Fleet, sink Sink, store Store, opts ...Option) (*Plane, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if fleet == nil || sink == nil || store == nil {
		return nil, errors.New("controlplane: New needs a fleet, a sink and a store")
	}
	cfg.normalize()
	p := &Plane{cfg: cfg, fleet: fleet, sink: sink, store: store, clock: time.Now,
		all: map[string]*Directive{}, compiled: map[string][]*governor.Invariant{}}
	for _, o := range opts {
		o(p)
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.nextDue.Store(math.MaxInt64)
	if !cfg.Enabled {
		return p, nil
	}
	ctx := context.Background()
	stored, err := store.LoadDirectives(ctx)
	if err != nil {
		return nil, fmt.Errorf("controlplane: load directives: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.load(stored)
	if _, err := p.expireDueLocked(ctx); err != nil {
		return nil, err
	}
	p.publish()
	return p, nil
}

// load replaces the directives in memory with stored (under p.mu).
func (p *Plane) load(stored []Directive) {
	slices.SortFunc(stored, func(a, b Directive) int {
		return cmp.Or(a.IssuedAt.Compare(b.IssuedAt), cmp.Compare(a.ID, b.ID))
	})
	p.all = make(map[string]*Directive, len(stored))
	p.active = nil
	compiled := map[string][]*governor.Invariant{}
	for i := range stored {
		d := &stored[i]
		p.all[d.ID] = d
		if !d.Active() {
			continue
		}
		p.active = append(p.active, d)
		if d.Type == Enforce {
			if c, ok := p.compiled[d.ID]; ok {
				compiled[d.ID] = c
			} else {
				compiled[d.ID] = compileInvariants(d)
			}
		}
	}
	p.compiled = compiled
	p.gen++
	p.updateNextDue()
}

// now is the plane's clock in UTC.
func (p *Plane) now() time.Time { return p.clock().UTC() }

// publish hands the overlays of the active directives to the sink (under
// p.mu, so overlays are published in the order of the changes).
func (p *Plane) publish() {
	if p.cfg.Enabled {
		p.sink.SetOverlays(buildOverlays(p.active, p.compiled))
	}
}

// put installs d (new, or a changed copy of a directive) in memory, under
// p.mu. compiled is d's compiled invariants when d is a new enforce
// directive.
func (p *Plane) put(d *Directive, compiled []*governor.Invariant) {
	_, known := p.all[d.ID]
	p.all[d.ID] = d
	i := slices.IndexFunc(p.active, func(a *Directive) bool { return a.ID == d.ID })
	switch {
	case d.Active() && i >= 0:
		p.active[i] = d
	case d.Active() && !known:
		p.active = append(p.active, d)
		if d.Type == Enforce {
			p.compiled[d.ID] = compiled
		}
	case !d.Active() && i >= 0:
		p.active = slices.Delete(p.active, i, i+1)
		delete(p.compiled, d.ID)
	}
	p.gen++
	p.updateNextDue()
}

func (p *Plane) updateNextDue() {
	next := int64(math.MaxInt64)
	for _, d := range p.active {
		if !d.ExpiresAt.IsZero() {
			next = min(next, d.ExpiresAt.UnixNano())
		}
	}
	p.nextDue.Store(next)
}

// resync reloads the directives from the store after a change was only
// partly saved, so that memory and the overlays follow what is stored
// (under p.mu; best effort).
func (p *Plane) resync(ctx context.Context) {
	stored, err := p.store.LoadDirectives(ctx)
	if err != nil {
		p.log.Error("controlplane: reload directives after a failed save", "err", err)
		return
	}
	p.load(stored)
	p.publish()
}

// record appends events to the store, stopping at the first failure.
func (p *Plane) record(ctx context.Context, events []Event) error {
	for _, e := range events {
		if err := p.store.AppendEvent(ctx, e); err != nil {
			return fmt.Errorf("controlplane: record %s event for %s: %w", e.ContextCode, e.Target, err)
		}
	}
	return nil
}

// Get returns a directive, active or expired, or ErrNotFound.
func (p *Plane) Get(_ context.Context, id string) (Directive, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.all[id]
	if !ok {
		return Directive{}, fmt.Errorf("%w: no directive %s", ErrNotFound, id)
	}
	return d.Clone(), nil
}

// List returns the active directives, oldest first (none when the plane is
// disabled).
func (p *Plane) List(context.Context) ([]Directive, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Directive, 0, len(p.active))
	for _, d := range p.active {
		out = append(out, d.Clone())
	}
	return out, nil
}

// Events returns the provenance events f selects, newest first.
func (p *Plane) Events(ctx context.Context, f EventFilter) ([]Event, error) {
	return p.store.Events(ctx, f)
}

// ObserveEvaluation counts one evaluation; every Config.ExpiryEvery-th one
// runs ExpireDue when a directive is due. Callers call it after each
// governor evaluation that is not a dry run (the proxy and the evaluate
// route). It costs an atomic increment; on the counted evaluation, a clock
// read and an atomic load, and it takes the plane's lock only when a
// directive is due, in which case that caller pays for the expiry (the
// store writes). Errors go to the plane's logger.
func (p *Plane) ObserveEvaluation() {
	if !p.cfg.Enabled || p.evals.Add(1)%uint64(p.cfg.ExpiryEvery) != 0 {
		return
	}
	if p.clock().UnixNano() < p.nextDue.Load() {
		return
	}
	if _, err := p.ExpireDue(context.Background()); err != nil {
		p.log.Error("controlplane: expire due directives", "err", err)
	}
}

// Watcher is implemented by a Store that several processes share (the
// Redis store): it tells the plane when the stored directives may have been
// changed by another process.
type Watcher interface {
	// Watch calls changed whenever the stored directives may have changed:
	// after each change, by any process, and whenever it (re)connects to
	// the store, since changes made while it was disconnected are not
	// signalled. changed does not block. Watch returns nil when ctx ends,
	// ErrClosed when the store is closed, or an error when it cannot
	// watch any more.
	Watch(ctx context.Context, changed func()) error
}

// Reload re-reads every directive from the store, replaces the ones in
// memory with them and publishes their overlays; the compiled invariants of
// enforce directives already known are kept, new ones are compiled. It is
// how a plane follows the directives other processes issue or expire on a
// shared store; Run calls it on each signal of a Watcher store. When the
// store fails, nothing changes: the plane keeps enforcing the overlays it
// has, and Reload returns the error. A disabled plane does nothing.
//
// The store is read without holding the plane's lock (Issue, Expire, List
// and Get do not wait on it); when the plane changed meanwhile, the read is
// repeated, and after three such rounds it is made under the lock.
func (p *Plane) Reload(ctx context.Context) error {
	if !p.cfg.Enabled {
		return nil
	}
	for range 3 {
		p.mu.Lock()
		gen := p.gen
		p.mu.Unlock()
		stored, err := p.store.LoadDirectives(ctx)
		if err != nil {
			return fmt.Errorf("controlplane: reload directives: %w", err)
		}
		p.mu.Lock()
		if p.gen == gen {
			p.load(stored)
			p.publish()
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	stored, err := p.store.LoadDirectives(ctx)
	if err != nil {
		return fmt.Errorf("controlplane: reload directives: %w", err)
	}
	p.load(stored)
	p.publish()
	return nil
}

// Retry delays of a failed Reload in Run: doubling from the first to the
// last, reset by each signal.
const (
	reloadRetryFirst = 100 * time.Millisecond
	reloadRetryLast  = 5 * time.Second
	// watchRetry is how long Run waits before watching again after Watch
	// failed.
	watchRetry = time.Second
)

// Run checks expiry every Config.ExpiryInterval until ctx ends. When the
// store is a Watcher, Run also watches it and calls Reload on each signal,
// so directives issued or expired by other processes bind here too: bursts
// of signals are coalesced (one reload runs at a time, and signals arriving
// meanwhile cause one more), and a reload that fails (the store is
// unreachable) leaves the last overlays in force and is retried on the next
// signal and after a backoff (100ms doubling to 5s). Errors go to the
// plane's logger. Run returns once its goroutines have stopped; it returns
// at once when the plane is disabled.
func (p *Plane) Run(ctx context.Context) {
	if !p.cfg.Enabled {
		return
	}
	if w, ok := p.store.(Watcher); ok {
		var wg sync.WaitGroup
		defer wg.Wait()
		signal := make(chan struct{}, 1)
		wg.Go(func() { p.watch(ctx, w, signal) })
		wg.Go(func() { p.reloadOnSignal(ctx, signal) })
	}
	t := time.NewTicker(p.cfg.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if p.clock().UnixNano() < p.nextDue.Load() {
				continue
			}
			if _, err := p.ExpireDue(ctx); err != nil && ctx.Err() == nil {
				p.log.Error("controlplane: expire due directives", "err", err)
			}
		}
	}
}

// watch runs w.Watch until ctx ends, watching again after a failure; each
// change signal is sent on signal unless one is pending already.
func (p *Plane) watch(ctx context.Context, w Watcher, signal chan<- struct{}) {
	notify := func() {
		select {
		case signal <- struct{}{}:
		default:
		}
	}
	keepWatching(ctx, p.log, "directive changes", func(ctx context.Context) error { return w.Watch(ctx, notify) })
}

// keepWatching runs watch until ctx ends or the store is closed, starting
// it again watchRetry after each failure; what names the changes watched.
func keepWatching(ctx context.Context, log *slog.Logger, what string, watch func(context.Context) error) {
	for {
		err := watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, ErrClosed) {
			log.Error("controlplane: store closed; no longer watching for " + what)
			return
		}
		log.Error("controlplane: watch for "+what+"; watching again", "err", err, "in", watchRetry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(watchRetry):
		}
	}
}

// reloadOnSignal calls Reload for each signal until ctx ends, retrying a
// failed one with a backoff.
func (p *Plane) reloadOnSignal(ctx context.Context, signal <-chan struct{}) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var delay time.Duration // of the last retry; 0 after a signal
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-signal:
			delay = 0
		case <-retry.C:
		}
		retry.Stop()
		err := p.Reload(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			if failing {
				p.log.Info("controlplane: directives reloaded after failures")
			}
			delay, failing = 0, false
			continue
		}
		failing = true
		delay = min(max(2*delay, reloadRetryFirst), reloadRetryLast)
		p.log.Error("controlplane: reload directives failed; the last overlays stay in force", "err", err, "retry_in", delay)
		retry.Reset(delay)
	}
}
