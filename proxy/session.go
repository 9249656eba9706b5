package proxy

import (
	"sync"
)

// maxSessions bounds the MCP sessions remembered; the oldest are forgotten
// first.
const maxSessions = 1 << 16

// sessions remembers the MCP session ids upstreams issued (the
// Mcp-Session-Id header of their answers), per endpoint (host and path).
// Only a GET or DELETE carrying a session id the endpoint issued is MCP
// protocol traffic forwarded without a decision; with any other id it is
// governed like a plain request, so the header cannot be used to slip a
// DELETE past governance.
type sessions struct {
	mu    sync.Mutex
	known map[string]struct{}
	order []string // insertion order, for eviction
}

func newSessions() *sessions { return &sessions{known: map[string]struct{}{}} }

func sessionKey(endpoint, id string) string { return endpoint + "\x00" + id }

func (s *sessions) add(endpoint, id string) {
	k := sessionKey(endpoint, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.known[k]; ok {
		return
	}
	if len(s.order) >= maxSessions {
		delete(s.known, s.order[0])
		s.order = s.order[1:]
	}
	s.known[k] = struct{}{}
	s.order = append(s.order, k)
}

func (s *sessions) has(endpoint, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.known[sessionKey(endpoint, id)]
	return ok
}
