package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/elazarl/goproxy"
)

// The child roles: the load program re-executes itself with -role upstream
// or -role goproxy, so that each server under test is a process of its own,
// as vigil serve is.

// itemPad makes the GET answer about 200 bytes.
var itemPad = strings.Repeat("x", 64)

// upstreamHandler is the tool behind the proxies: GET /api/items?id=N
// answers a ~200-byte JSON item, POST /api/items echoes its JSON body.
func upstreamHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/items", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.URL.Query().Get("id"))
		b := fmt.Appendf(nil, `{"id":%d,"name":"item-%d","price_cents":%d,"in_stock":true,"tags":["load","bench"],"description":%q}`,
			id, id, 100+id%900, itemPad)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	})
	mux.HandleFunc("POST /api/items", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil || len(body) == 0 {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
		b := fmt.Appendf(nil, `{"created":true,"item":%s}`, body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(b)
	})
	return mux
}

// plainGoproxy is the baseline: goproxy as it comes, with the same upstream
// transport settings as Vigil's proxy (no proxy from the environment, 1,024
// idle connections per host, no transparent gzip), silent, and no hooks.
func plainGoproxy() http.Handler {
	gp := goproxy.NewProxyHttpServer()
	gp.Verbose = false
	gp.Logger = discardLogger{}
	gp.ConnectDial = nil
	gp.KeepAcceptEncoding = true
	gp.Tr = &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
	return gp
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// runRole serves role on addr until SIGTERM or SIGINT. It prints
// "listening ADDR" on stdout once it accepts, for the parent to read.
func runRole(role, addr string) int {
	var h http.Handler
	switch role {
	case "upstream":
		h = upstreamHandler()
	case "goproxy":
		h = plainGoproxy()
	default:
		fmt.Fprintf(os.Stderr, "load: unknown role %q\n", role)
		return 2
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "load %s: %v\n", role, err)
		return 1
	}
	// The timeouts of Vigil's proxy server.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second}
	fmt.Printf("listening %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(os.Stderr, "load %s: %v\n", role, err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return 1
	}
	return 0
}
