package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy/toolcall"
)

// Response headers (API.md section 4).
const (
	HeaderVerdict   = "X-Vigil-Verdict"
	HeaderLedgerSeq = "X-Vigil-Ledger-Seq"
	// HeaderLedger is "spooled" when the decision's entry was kept in the
	// ledger's local spool (Redis unreachable): it has no sequence yet, and
	// gets one when it is replayed.
	HeaderLedger     = "X-Vigil-Ledger"
	HeaderAdvisory   = "X-Vigil-Advisory"
	HeaderApproval   = "X-Vigil-Approval"
	HeaderApprovalID = "X-Vigil-Approval-Id"
)

// Error codes of the proxy's own answers.
const (
	CodeDenied              = "governance_denied"
	CodeEscalated           = "governance_escalated"
	CodeSuspended           = "governance_suspended"
	CodeInterrupted         = "governance_interrupted"
	CodeProxyAuth           = "proxy_authentication_required"
	CodeUpstreamUnreachable = "upstream_unreachable"
	CodeUpstreamUnavailable = "upstream_unavailable"
)

// setHeaders writes the verdict headers of c.
func (c *call) setHeaders(h http.Header) {
	if c.verdict != "" {
		h.Set(HeaderVerdict, c.verdict)
	}
	switch {
	case c.seq > 0:
		h.Set(HeaderLedgerSeq, strconv.FormatInt(c.seq, 10))
	case c.seq == seqSpooled:
		h.Set(HeaderLedger, "spooled")
	}
	if c.advisory != "" {
		h.Set(HeaderAdvisory, c.advisory)
	}
	if c.approvalID != "" {
		h.Set(HeaderApprovalID, c.approvalID)
		if c.approved {
			h.Set(HeaderApproval, "approved")
		}
	}
}

// errorBody is the proxy's error envelope, the API's own plus the verdict
// of a refused call.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Verdict    *verdictBody `json:"verdict,omitempty"`
	Ledger     *ledgerRef   `json:"ledger,omitempty"`
	ApprovalID string       `json:"approval_id,omitempty"`
}

type verdictBody struct {
	Decision   string     `json:"decision"`
	UCS        float64    `json:"ucs"`
	Tier       int        `json:"tier"`
	Reasoning  string     `json:"reasoning"`
	Vetoes     []string   `json:"vetoes"`
	Ledger     *ledgerRef `json:"ledger,omitempty"`
	ApprovalID string     `json:"approval_id,omitempty"`
}

type ledgerRef struct {
	AgentID  string `json:"agent_id"`
	Sequence int64  `json:"sequence"`
	// Spooled: the entry waits in the ledger's local spool; Sequence is 0
	// until it is replayed.
	Spooled bool `json:"spooled,omitempty"`
}

func newVerdictBody(d *governor.Decision) *verdictBody {
	v := &verdictBody{Decision: d.Verdict.String(), UCS: d.UCS, Tier: d.Tier, Reasoning: d.Reasoning, Vetoes: d.Vetoes}
	if v.Vetoes == nil {
		v.Vetoes = []string{}
	}
	return v
}

// refusal is how a refused verdict reads: its error code and, for MCP, the
// text the model reads.
func refusal(v governor.Verdict) (code, prefix string) {
	switch v {
	case governor.Deny:
		return CodeDenied, "Denied by governance: "
	case governor.Suspend:
		return CodeSuspended, "Suspended by governance: "
	default: // ESCALATE, and MODIFY without a modification
		return CodeEscalated, "Held for human approval and not approved: "
	}
}

// refuse answers a refused call: 403 with the verdict, or for an MCP
// request a JSON-RPC result with isError (MCP's tool-error channel) per
// message with an id. The upstream is never contacted.
func (p *Proxy) refuse(req *http.Request, c *call, r decided) *http.Response {
	code, prefix := refusal(r.d.Verdict)
	vb := newVerdictBody(r.d)
	var ref *ledgerRef
	if r.seq >= 0 {
		ref = &ledgerRef{AgentID: c.agent, Sequence: r.seq, Spooled: r.seq == seqSpooled}
	}
	msg := r.d.Reasoning
	if c.approvalID != "" {
		msg += " (approval " + c.approvalID + ": retry the identical call once it is approved)"
	}
	if ids := requestIDs(&c.parsed); len(ids) > 0 {
		vb.Ledger, vb.ApprovalID = ref, c.approvalID
		results := make([]json.RawMessage, 0, len(ids))
		for _, id := range ids {
			results = append(results, mcpToolError(id, prefix+msg, vb))
		}
		body := results[0]
		if c.parsed.Batch {
			body, _ = json.Marshal(results)
		}
		return p.endWith(c, newResponse(req, http.StatusOK, "application/json", body, c))
	}
	var e errorBody
	e.Error.Code, e.Error.Message = code, msg
	e.Verdict, e.Ledger, e.ApprovalID = vb, ref, c.approvalID
	b, _ := json.Marshal(e)
	return p.endWith(c, newResponse(req, http.StatusForbidden, "application/json", b, c))
}

// requestIDs returns the ids of the JSON-RPC requests of an MCP call (not
// its notifications or responses), in order.
func requestIDs(c *toolcall.Call) []json.RawMessage {
	if c.Kind != toolcall.KindMCP {
		return nil
	}
	var ids []json.RawMessage
	for _, m := range c.Messages {
		if m.RPC != "" && len(m.ID) > 0 {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// mcpToolError is a JSON-RPC result that MCP clients hand to the model as a
// tool error.
func mcpToolError(id json.RawMessage, text string, vb *verdictBody) json.RawMessage {
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	out := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  struct {
			Content []content               `json:"content"`
			IsError bool                    `json:"isError"`
			Meta    map[string]*verdictBody `json:"_meta"`
		} `json:"result"`
	}{JSONRPC: "2.0", ID: id}
	out.Result.Content = []content{{Type: "text", Text: text}}
	out.Result.IsError = true
	out.Result.Meta = map[string]*verdictBody{"vigil/verdict": vb}
	b, _ := json.Marshal(out)
	return b
}

// answer is one of the proxy's own error answers, with c's headers; it
// ends c.
func (p *Proxy) answer(req *http.Request, c *call, status int, code, msg string) *http.Response {
	return p.endWith(c, errorResponse(req, c, status, code, msg))
}

// errorResponse is an error answer with c's headers (the verdict of a call
// decided, and recorded, before it failed).
func errorResponse(req *http.Request, c *call, status int, code, msg string) *http.Response {
	return newResponse(req, status, "application/json", errorJSON(code, msg), c)
}

// errorJSON is the error envelope {"error": {"code", "message"}}.
func errorJSON(code, msg string) []byte {
	var e errorBody
	e.Error.Code, e.Error.Message = code, msg
	b, _ := json.Marshal(e)
	return b
}

// proxyAuthMessage is the message of every 407.
const proxyAuthMessage = "identify the agent with Proxy-Authorization: Basic base64(agent_id:token) of a configured agent"

// authRequired is the 407 of a request without a valid identity.
func authRequired(req *http.Request) *http.Response {
	resp := newResponse(req, http.StatusProxyAuthRequired, "application/json", errorJSON(CodeProxyAuth, proxyAuthMessage), nil)
	resp.Header.Set("Proxy-Authenticate", `Basic realm="vigil"`)
	return resp
}

// endWith ends c (its span) on an answer of the proxy's own.
func (p *Proxy) endWith(c *call, resp *http.Response) *http.Response {
	c.end(p, 0)
	return resp
}

// newResponse builds a complete response with body b and c's headers (c may
// be nil).
func newResponse(req *http.Request, status int, contentType string, b []byte, c *call) *http.Response {
	h := make(http.Header, 6)
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if c != nil {
		c.setHeaders(h)
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req,
	}
}

// writeError writes the error envelope to w (handlers outside goproxy's
// request path).
func writeError(h http.Header, w io.Writer, status int, code, msg string) {
	b := errorJSON(code, msg)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if rw, ok := w.(http.ResponseWriter); ok {
		rw.WriteHeader(status)
	}
	_, _ = w.Write(b)
}
