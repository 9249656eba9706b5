package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestShutdownClosesFreshConnections: a connection on which no request has
// started (dialled ahead by an agent's client, or with its request line
// half sent) does not hold Shutdown up. The http.Server alone would count
// such a connection busy until it is 5 seconds old, so Shutdown's context
// here ends before that: without the proxy closing them, it fails.
func TestShutdownClosesFreshConnections(t *testing.T) {
	tests := []struct {
		name string
		sent string // what the client wrote before the shutdown
	}{
		{"nothing sent", ""},
		{"request line half sent", "GET http://tool.example/ HT"},
		{"headers unfinished", "GET http://tool.example/ HTTP/1.1\r\nHost: tool.example\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, botSetup())
			fresh, err := net.Dial("tcp", h.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			if tc.sent != "" {
				if _, err := io.WriteString(fresh, tc.sent); err != nil {
					t.Fatal(err)
				}
			}
			// The proxy accepts connections in the order they arrive: once
			// a later one is answered, the fresh one has been accepted.
			answered(t, h.addr)

			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			if err := h.proxy.Shutdown(ctx); err != nil {
				t.Fatalf("shutdown: %v (a fresh connection held it up)", err)
			}
			if err := fresh.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if n, err := fresh.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
				t.Errorf("fresh connection after shutdown: read %d bytes, err %v; want it closed", n, err)
			}
		})
	}
}

// answered sends an unauthenticated request on a new connection and waits
// for the proxy's 407.
func answered(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET http://tool.example/ HTTP/1.1\r\nHost: tool.example\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "407") {
		t.Fatalf("barrier request: got %q, %v; want a 407", line, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
