package controlplane

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

var _ ApprovalStore = (*MemoryStore)(nil)

// CreateApproval implements ApprovalStore.
func (s *MemoryStore) CreateApproval(_ context.Context, a Approval) error {
	if a.ID == "" {
		return fmt.Errorf("controlplane: approval without an id")
	}
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("controlplane: encode approval %s: %w", a.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.approvals[a.ID]; taken {
		return fmt.Errorf("%w: approval %s exists", ErrConflict, a.ID)
	}
	if s.approvals == nil {
		s.approvals = map[string][]byte{}
	}
	s.approvals[a.ID] = b
	return nil
}

// GetApproval implements ApprovalStore.
func (s *MemoryStore) GetApproval(_ context.Context, id string) (Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.approvals[id]
	if !ok {
		return Approval{}, fmt.Errorf("%w: no approval %s", ErrNotFound, id)
	}
	return decodeApproval(id, b)
}

// DecideApproval implements ApprovalStore.
func (s *MemoryStore) DecideApproval(_ context.Context, a Approval) error {
	if err := checkDecided(&a); err != nil {
		return err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("controlplane: encode approval %s: %w", a.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.approvals[a.ID]
	if !ok {
		return fmt.Errorf("%w: no approval %s", ErrNotFound, a.ID)
	}
	cur, err := decodeApproval(a.ID, old)
	if err != nil {
		return err
	}
	if !cur.Pending() {
		return fmt.Errorf("%w: approval %s is %s", ErrConflict, a.ID, cur.Status)
	}
	s.approvals[a.ID] = b
	return nil
}

// ListApprovals implements ApprovalStore.
func (s *MemoryStore) ListApprovals(_ context.Context, status string, limit int) ([]Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Approval{}
	for id, b := range s.approvals {
		a, err := decodeApproval(id, b)
		if err != nil {
			return nil, err
		}
		if status == "" || a.Status == status {
			out = append(out, a)
		}
	}
	return newestFirst(out, limit), nil
}

func decodeApproval(id string, b []byte) (Approval, error) {
	var a Approval
	if err := json.Unmarshal(b, &a); err != nil || a.ID == "" {
		return Approval{}, fmt.Errorf("%w: approval %s unreadable", ErrCorrupt, id)
	}
	return a, nil
}

// newestFirst sorts approvals newest (CreatedAt, then id) first and keeps at
// most limit of them (all when limit <= 0).
func newestFirst(as []Approval, limit int) []Approval {
	slices.SortFunc(as, func(a, b Approval) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	if limit > 0 && len(as) > limit {
		as = as[:limit:limit]
	}
	return as
}
