package proxy

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/elazarl/goproxy"

	"github.com/vigilhq/vigil/proxy/toolcall"
)

// maxToolsList bounds a JSON tools/list answer read for filtering.
const maxToolsList = 16 << 20

// prepareToolsFilter arranges for the answer to a tools/list request to be
// filtered to the agent's scope, unless the scope allows every tool. The
// answer must come unencoded to be read, so Accept-Encoding is dropped.
func (p *Proxy) prepareToolsFilter(req *http.Request, c *call) {
	if c.parsed.Kind != toolcall.KindMCP || !listsTools(&c.parsed) {
		return
	}
	ct, ok := p.gov.Contract(c.agent)
	if !ok || len(ct.Scope) == 0 || slices.Contains(ct.Scope, "*") {
		return // every tool is in scope: nothing to filter
	}
	c.filter = ct.InScope
	req.Header.Del("Accept-Encoding")
}

func listsTools(c *toolcall.Call) bool {
	for _, m := range c.Messages {
		if m.RPC == "tools/list" {
			return true
		}
	}
	return false
}

// onResponse is goproxy's response hook: it filters tools/list answers.
func (p *Proxy) onResponse(resp *http.Response, gctx *goproxy.ProxyCtx) *http.Response {
	c, _ := gctx.UserData.(*call)
	if resp == nil || c == nil || c.filter == nil || resp.StatusCode/100 != 2 {
		return resp
	}
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		// Cannot be read, so cannot be filtered: fail closed.
		_ = resp.Body.Close()
		return errorResponse(resp.Request, c, http.StatusBadGateway, CodeUpstreamUnreachable,
			"the tools/list answer is encoded ("+enc+") and cannot be filtered to the agent's scope")
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		resp.Body = toolcall.NewToolsListFilter(resp.Body, c.filter)
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxToolsList+1))
		_ = resp.Body.Close()
		if err != nil || len(b) > maxToolsList {
			return errorResponse(resp.Request, c, http.StatusBadGateway, CodeUpstreamUnreachable,
				"the tools/list answer could not be read for filtering")
		}
		out, _ := toolcall.FilterToolsList(b, c.filter)
		resp.Body = io.NopCloser(bytes.NewReader(out))
		resp.ContentLength = int64(len(out))
		resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	}
	return resp
}
