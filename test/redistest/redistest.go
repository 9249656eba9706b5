package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long Start and Restart wait for PING.
const startTimeout = 10 * time.Second

// Server is one redis-server process owned by a test.
type Server struct {
	// Addr is the server's host:port (always on 127.0.0.1).
	Addr string

	t    testing.TB
	bin  string
	dir  string
	port int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// Start starts a redis-server for t and stops it when t ends. It skips t
// when redis-server is not on PATH, unless the CI environment variable is
// set, in which case it fails t.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redistest: redis-server not found on PATH (CI is set, so Redis tests may not be skipped): %v", err)
		}
		t.Skipf("redistest: redis-server not found on PATH; install Redis to run this test: %v", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(s.kill)
	var lastErr error
	for range 3 { // a free port can be taken between probing and binding
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: find a free port: %v", err)
		}
		s.port, s.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.start(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("redistest: start redis-server: %v", lastErr)
	return nil
}

// URL returns the server's URL for database 0, as go-redis's ParseURL
// and redis-cli -u accept it.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Client returns a new go-redis client for the server, closed when t ends.
func (s *Server) Client(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop shuts the server down after saving a snapshot (SHUTDOWN SAVE), so
// that Restart brings the data back. Clients see connection errors until
// Restart. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	if conn, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Write([]byte("SHUTDOWN SAVE\r\n"))
		_, _ = bufio.NewReader(conn).ReadString('\n') // the server closes the connection as it exits
		_ = conn.Close()
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.t.Logf("redistest: redis-server on %s did not shut down; killing it", s.Addr)
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Restart starts the server again on the same port and directory (loading
// the snapshot Stop saved) and waits until it answers PING. Restarting a
// running server stops it first.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart redis-server on %s: %v", s.Addr, err)
	}
}

// start launches redis-server on s.port and waits for PING.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	logPath := filepath.Join(s.dir, "redis.log")
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--logfile", logPath)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited on start (port %d); log:\n%s", s.port, tail(logPath))
		default:
		}
		if ping(s.Addr) == nil {
			s.cmd, s.exited = cmd, exited
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redis-server on port %d did not answer PING within %v; log:\n%s", s.port, startTimeout, tail(logPath))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the process without saving; it is the cleanup of Start.
func (s *Server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// ping sends PING over a raw connection and expects +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last lines of the server's log, for failure messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
