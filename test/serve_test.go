package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// vigilBinary builds ./cmd/vigil once per test run.
func vigilBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vigil-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "vigil")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, "../cmd/vigil").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is one `vigil serve` process.
type server struct {
	cmd    *exec.Cmd
	base   string
	proxy  string // host:port of the forward proxy
	stderr *syncBuffer
	done   chan error
}

// syncBuffer is a bytes.Buffer that the child's stderr copier and the test
// may use at the same time.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startServe(t testing.TB, config string, extra ...string) *server {
	t.Helper()
	return startServeWith(t, vigilBinary(t), config, extra...)
}

// startServeWith starts `vigil serve` from the binary bin.
func startServeWith(t testing.TB, bin, config string, extra ...string) *server {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	port, proxyPort := freePort(t), freePort(t)
	args := append([]string{"serve", "--config", cfg, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--proxy-port", fmt.Sprint(proxyPort), "--data-dir", filepath.Join(dir, "data")}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "VIGIL_API_KEY=", "VIGIL_REDIS_URL=")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port), proxy: fmt.Sprintf("127.0.0.1:%d", proxyPort),
		stderr: stderr, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.base + "/v1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("vigil serve exited before serving: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("vigil serve did not become healthy\n%s", stderr.String())
		}
	}
}

func (s *server) post(t testing.TB, path, key, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: body is not JSON: %v", path, err)
	}
	return resp.StatusCode, out
}

func quickstart(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServeEvaluateAndShutdown walks the README: start on the quickstart
// configuration, evaluate an allowed and a denied action, then SIGTERM.
func TestServeEvaluateAndShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	s := startServe(t, quickstart(t), "--playground")

	cases := []struct {
		name       string
		path, key  string
		body       string
		wantStatus int
		wantVerd   string
		wantCode   string
	}{
		{"allowed read", "/v1/evaluate", "k-ops",
			`{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/customers/42"}}`, 200, "ALLOW", ""},
		{"refund over the authority limit", "/v1/evaluate", "k-ops",
			`{"agent_id":"support-bot","action":{"type":"refund","target":"payments/orders/42","parameters":{"amount":900}},"context":{"instruction":"refund the damaged order"}}`, 200, "DENY", ""},
		{"playground dry run", "/v1/playground/evaluate", "k-ops",
			`{"agent_id":"support-bot","action":{"type":"read","target":"api.example.com/customers/42"}}`, 200, "ALLOW", ""},
		{"viewer may not evaluate", "/v1/evaluate", "k-view",
			`{"agent_id":"support-bot","action":{"type":"read","target":"x"}}`, 403, "", "forbidden"},
		{"no key", "/v1/evaluate", "",
			`{"agent_id":"support-bot","action":{"type":"read","target":"x"}}`, 401, "", "unauthenticated"},
		{"unknown agent", "/v1/evaluate", "k-ops",
			`{"agent_id":"nobody","action":{"type":"read","target":"x"}}`, 404, "", "not_found"},
		{"missing agent", "/v1/evaluate", "k-ops", `{"action":{"type":"read","target":"x"}}`, 400, "", "invalid_request"},
		{"wrong type", "/v1/evaluate", "k-ops", `{"agent_id":7,"action":{"type":"read"}}`, 400, "", "invalid_request"},
		{"two MiB body", "/v1/evaluate", "k-ops", `{"agent_id":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "", "payload_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := s.post(t, tc.path, tc.key, tc.body)
			if status != tc.wantStatus {
				t.Fatalf("status: got %d, want %d (%v)", status, tc.wantStatus, body)
			}
			if tc.wantVerd != "" && body["decision"] != tc.wantVerd {
				t.Errorf("decision: got %v, want %s (%v)", body["decision"], tc.wantVerd, body["reasoning"])
			}
			if tc.wantCode != "" {
				e, _ := body["error"].(map[string]any)
				if e["code"] != tc.wantCode {
					t.Errorf("error code: got %v, want %s", e["code"], tc.wantCode)
				}
			}
		})
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: got %v, want status 0\n%s", err, s.stderr.String())
		}
		s.done <- nil // for the cleanup
	case <-time.After(35 * time.Second):
		t.Fatalf("no exit within 35 s of SIGTERM\n%s", s.stderr.String())
	}
}

// TestServeRefusesBadConfig: a bad configuration stops the start with a
// message naming the key, and exit status 1.
func TestServeRefusesBadConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cases := []struct {
		name, config, want string
	}{
		{"unknown archetype", "agents:\n  - {id: a, token: t, archetype: finacial-analyst}\n", `did you mean "financial-analyst"`},
		{"bad CEL", "agents:\n  - {id: a, token: t, authority: [\"action.parameters.amount <=\"]}\n", "agents[0].authority[0]"},
		{"unknown key", "agents:\n  - {id: a, token: t, scoop: [read]}\n", "scoop"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "bad.yaml")
			if err := os.WriteFile(cfg, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, vigilBinary(t), "serve", "--config", cfg, "--port", fmt.Sprint(freePort(t)))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("got %v, want exit status 1\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("message %q does not contain %q", out, tc.want)
			}
		})
	}
}
