package proxy

import (
	"testing"

	"github.com/vigilhq/vigil/governor"
)

// TestUpstreamNeverUsesProxyEnvironment checks the settings themselves:
// net/http reads HTTP_PROXY once per process and caches it, so the
// end-to-end TestTransportIgnoresProxyEnvironment alone could pass while a
// transport that honours the environment had read it before the test set
// it.
func TestUpstreamNeverUsesProxyEnvironment(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1") // goproxy reads it when it is built
	engine, err := governor.New(governor.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Governor: engine})
	if err != nil {
		t.Fatal(err)
	}
	if p.tr.Proxy != nil {
		t.Error("the upstream transport has a Proxy function, want none")
	}
	if p.gp.Tr != p.tr {
		t.Error("goproxy does not use the proxy's own transport")
	}
	if p.gp.ConnectDial != nil {
		t.Error("goproxy dials CONNECT targets through HTTPS_PROXY, want the proxy's own dialer")
	}
	if p.gp.ConnectDialWithReq == nil {
		t.Error("no CONNECT dialer of the proxy's own")
	}
}
