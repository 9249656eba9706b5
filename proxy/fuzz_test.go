package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy"
)

// FuzzProxyRequest sends whatever an agent might send, as a raw HTTP
// request, through the proxy's handler to a local tool: nothing may crash
// it, every answer after identification carries a verdict, and a call
// refused by governance never reaches the tool.
func FuzzProxyRequest(f *testing.F) {
	seeds := []struct{ method, path, headers, body string }{
		{"GET", "/docs?q=1&q=2", "", ""},
		{"POST", "/mcp", "Content-Type: application/json\r\n", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_docs","arguments":{"q":"x"}}}`},
		{"POST", "/mcp", "Content-Type: application/json\r\n", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`},
		{"POST", "/mcp", "Content-Type: application/json\r\n", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":`},
		{"DELETE", "/items/1", "Mcp-Session-Id: abc\r\n", ""},
		{"PUT", "/x", "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n"},
		{"PATCH", "/%zz", "", "{}"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.headers, []byte(s.body))
	}
	var hits int64
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search_docs"},{"name":"other"}]}}`)
	}))
	defer tool.Close()
	engine, err := governor.New(governor.DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	if err := engine.SetContract(governor.Contract{AgentID: "bot", Scope: []string{"read", "create", "search_docs"}}); err != nil {
		f.Fatal(err)
	}
	p, err := proxy.New(proxy.Options{Governor: engine, Tokens: map[string]string{"bot": "s3cret"}, HoldTimeout: time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	host := strings.TrimPrefix(tool.URL, "http://")
	f.Fuzz(func(t *testing.T, method, path, headers string, body []byte) {
		if method == http.MethodConnect {
			return // needs a hijackable connection: covered by the CONNECT tests
		}
		raw := method + " http://" + host + path + " HTTP/1.1\r\nHost: " + host + "\r\n" +
			"Proxy-Authorization: Basic Ym90OnMzY3JldA==\r\n" + headers + "\r\n" + string(body)
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader([]byte(raw))))
		if err != nil {
			return // Go's server answers 400 before the proxy sees it
		}
		if req.URL.Host != host {
			return // the fuzzer rewrote the target: never call out
		}
		req.RequestURI = ""
		rec := httptest.NewRecorder()
		before := hits
		p.Handler().ServeHTTP(rec, req)
		if rec.Code == 0 {
			t.Fatal("no status written")
		}
		v := rec.Header().Get(proxy.HeaderVerdict)
		switch {
		case rec.Code == http.StatusProxyAuthRequired, rec.Code == http.StatusBadRequest && v == "":
		case v == "":
			t.Fatalf("answer %d without %s", rec.Code, proxy.HeaderVerdict)
		case v != "ALLOW" && v != "MODIFY" && hits != before:
			t.Fatalf("a %s call reached the tool", v)
		}
	})
}
