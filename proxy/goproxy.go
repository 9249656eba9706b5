package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/elazarl/goproxy"
)

// newGoproxy builds the goproxy server: every request goes through
// onRequest (identify, parse, decide, record, act) and, when forwarded,
// through the proxy's own round tripper (breaker, trace context, call
// tracking); every CONNECT through onConnect.
func (p *Proxy) newGoproxy() *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = goproxyLogger{p.log}
	gp.Tr = p.tr
	// NewProxyHttpServer dials CONNECT targets through HTTPS_PROXY when it
	// is set; the proxy dials them itself (and never loops through itself).
	gp.ConnectDial = nil
	gp.ConnectDialWithReq = p.dialTunnel
	// Bodies pass unchanged: no transparent gzip between agent and tool.
	gp.KeepAcceptEncoding = true
	gp.NonproxyHandler = http.HandlerFunc(notAProxyRequest)
	gp.OnRequest().DoFunc(p.onRequest)
	gp.OnResponse().DoFunc(p.onResponse)
	gp.OnRequest().HandleConnectFunc(p.onConnect)
	return gp
}

// notAProxyRequest answers a request in origin form ("GET /path") sent to
// the proxy port: the agent talks to the proxy as if it were the tool.
func notAProxyRequest(w http.ResponseWriter, _ *http.Request) {
	writeError(w.Header(), w, http.StatusBadRequest, "not_a_proxy_request",
		"this is Vigil's forward proxy: set HTTP_PROXY to it and send absolute URLs")
}

// goproxyLogger sends goproxy's messages (connection-level noise: clients
// going away, handshakes failing) to the debug log.
type goproxyLogger struct{ log *slog.Logger }

func (l goproxyLogger) Printf(format string, v ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("goproxy: " + strings.TrimSpace(fmt.Sprintf(format, v...)))
	}
}
