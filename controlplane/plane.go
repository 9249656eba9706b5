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

// Run checks expiry every Config.ExpiryInterval until ctx ends. Errors go to
// the plane's logger. It returns at once when the plane is disabled.
func (p *Plane) Run(ctx context.Context) {
	if !p.cfg.Enabled {
		return
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
