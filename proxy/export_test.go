package proxy

// Tunnels returns how many hijacked connections (CONNECT tunnels) the
// proxy keeps to close at shutdown.
func (p *Proxy) Tunnels() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tunnels)
}
