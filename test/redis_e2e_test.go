package test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/test/redistest"
)

// TestTwoSidecarsShareOneChain: two `vigil serve` processes on one Redis
// record decisions for the same agent at the same time; the agent's chain
// is one line with no fork and no gap, whichever sidecar is asked.
func TestTwoSidecarsShareOneChain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary and redis-server")
	}
	rdb := redistest.Start(t)
	cfg := quickstart(t)
	a := startServe(t, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "a"))
	b := startServe(t, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(t.TempDir(), "b"))

	const perSidecar = 30
	var wg sync.WaitGroup
	seqs := make(chan int, 2*perSidecar)
	for _, s := range []*server{a, b} {
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perSidecar / 3 {
					body := fmt.Sprintf(`{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/customers/%d-%d"}}`, w, i)
					status, out := s.post(t, "/v1/evaluate", "k-ops", body)
					if status != 200 {
						t.Errorf("evaluate: got %d %v", status, out)
						return
					}
					l, _ := out["ledger"].(map[string]any)
					seqs <- int(l["sequence"].(float64))
				}
			}()
		}
	}
	wg.Wait()
	close(seqs)
	seen := map[int]bool{}
	for s := range seqs {
		if seen[s] {
			t.Errorf("sequence %d handed out twice (a fork)", s)
		}
		seen[s] = true
	}
	for i := 1; i <= 2*perSidecar; i++ {
		if !seen[i] {
			t.Errorf("sequence %d missing (a gap)", i)
		}
	}
	for _, s := range []*server{a, b} {
		status, r := s.get(t, "/v1/ledger/support-bot/verify", "k-view")
		if status != 200 || r["valid"] != true || int(r["entries"].(float64)) != 2*perSidecar {
			t.Errorf("verify: got %d %v, want a valid chain of %d", status, r, 2*perSidecar)
		}
		_, info := s.get(t, "/v1/info", "k-view")
		if info["store"] != "redis" {
			t.Errorf("info store: got %v, want redis", info["store"])
		}
	}
}
