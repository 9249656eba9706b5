package test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vigilhq/vigil/test/redistest"
)

// BenchmarkDirectivePropagationAcrossProcesses: two `vigil serve`
// processes on one private redis-server. For each of 200 rounds a
// quarantine is POSTed to sidecar A and timed until sidecar B refuses the
// agent's next action (a dry-run evaluation on B answers ESCALATE); then it
// is DELETEd on A and B is polled until it allows again. Reports p50, p99
// and max of the POST-to-enforcement time (polling every ~1 ms bounds the
// resolution).
//
//	go test -run '^$' -bench PropagationAcrossProcesses -benchtime 1x ./test/
func BenchmarkDirectivePropagationAcrossProcesses(b *testing.B) {
	// A plain build: the tests' race-instrumented binary would measure the
	// race detector.
	bin := filepath.Join(b.TempDir(), "vigil")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/vigil").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	rdb := redistest.Start(b)
	cfg := quickstart(b)
	a := startServeWith(b, bin, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(b.TempDir(), "a"))
	s := startServeWith(b, bin, cfg, "--redis-url", rdb.URL(), "--data-dir", filepath.Join(b.TempDir(), "b"))
	const rounds = 200
	probe := `{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/customers/1"}}`
	waitFor := func(want string) {
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, out := s.post(b, "/v1/playground/evaluate", "k-ops", probe)
			if out["decision"] == want {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("sidecar B never answered %s (last: %v)", want, out["decision"])
			}
			time.Sleep(500 * time.Microsecond)
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		lat = lat[:0]
		for i := range rounds {
			t0 := time.Now()
			status, out := a.post(b, "/v1/control/directives", "k-ops",
				fmt.Sprintf(`{"type":"quarantine","target":{"agent_ids":["support-bot"]},"reason":"propagation round %d"}`, i))
			if status != 201 {
				b.Fatalf("issue: got %d %v", status, out)
			}
			waitFor("ESCALATE")
			lat = append(lat, time.Since(t0))
			id := out["directive"].(map[string]any)["id"].(string)
			if status, _ := a.del(b, "/v1/control/directives/"+id, "k-ops"); status != 200 {
				b.Fatalf("expire: got %d", status)
			}
			waitFor("ALLOW")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
