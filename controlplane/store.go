package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Store is where the control plane keeps its directives and provenance
// events: FileStore (embedded, the default), MemoryStore, the Redis store, or
// any implementation that passes controlplanetest.Run. Methods are safe for
// concurrent use. Values read back are the JSON decoding of what was written
// (a []string in Event.Details reads back as []any).
type Store interface {
	// SaveDirective inserts d, or replaces the directive with d's id. It
	// returns once d is as durable as the store promises.
	SaveDirective(ctx context.Context, d Directive) error
	// LoadDirectives returns every saved directive, active and expired, in
	// no particular order.
	LoadDirectives(ctx context.Context) ([]Directive, error)
	// AppendEvent appends a provenance event.
	AppendEvent(ctx context.Context, e Event) error
	// Events returns the events f selects, newest (last appended) first, at
	// most f.Limit of them.
	Events(ctx context.Context, f EventFilter) ([]Event, error)
}

// MemoryStore is a Store in memory, for tests and for embedding programs that
// need no persistence. It keeps the JSON encoding of what it is given, so it
// reads back exactly what a persistent store would. The zero value is ready
// to use.
type MemoryStore struct {
	mu         sync.Mutex
	directives map[string][]byte
	events     [][]byte
	approvals  map[string][]byte // approvals_memory.go
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// SaveDirective implements Store.
func (s *MemoryStore) SaveDirective(_ context.Context, d Directive) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("controlplane: encode directive %s: %w", d.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.directives == nil {
		s.directives = map[string][]byte{}
	}
	s.directives[d.ID] = b
	return nil
}

// LoadDirectives implements Store.
func (s *MemoryStore) LoadDirectives(context.Context) ([]Directive, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Directive, 0, len(s.directives))
	for id, b := range s.directives {
		var d Directive
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("controlplane: decode directive %s: %w", id, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// AppendEvent implements Store.
func (s *MemoryStore) AppendEvent(_ context.Context, e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("controlplane: encode event %s: %w", e.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, b)
	return nil
}

// Events implements Store.
func (s *MemoryStore) Events(_ context.Context, f EventFilter) ([]Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Event{}
	for i := len(s.events) - 1; i >= 0 && (f.Limit <= 0 || len(out) < f.Limit); i-- {
		var e Event
		if err := json.Unmarshal(s.events[i], &e); err != nil {
			return nil, fmt.Errorf("controlplane: decode event: %w", err)
		}
		if f.Match(&e) {
			out = append(out, e)
		}
	}
	return out, nil
}
