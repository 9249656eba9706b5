package toolcall

import (
	"encoding/json"

	"github.com/vigilhq/vigil/governor"
)

// InspectLimit is how much of a request body is inspected (256 KiB); the
// whole body is still forwarded.
const InspectLimit = 256 << 10

// Request is what Parse needs of an HTTP request. It holds no net/http types,
// so that it can be built in tests and fuzzed cleanly.
type Request struct {
	Method      string
	Scheme      string // "http" or "https"; a target omits the scheme's default port
	Host        string // host[:port] as in the URL
	Path        string // URL path (decoded, as url.URL.Path); "" is read as "/"
	RawQuery    string
	ContentType string
	SessionID   string // Mcp-Session-Id header, "" when absent
	Body        []byte // at most InspectLimit bytes of the body
	Truncated   bool   // the body was longer than Body
}

// Kind is what sort of call a request is.
type Kind uint8

// Kinds of call.
const (
	KindHTTP    Kind = iota + 1 // a plain HTTP action (one Message)
	KindMCP                     // a JSON-RPC message or batch (one Message per JSON-RPC message)
	KindConnect                 // a CONNECT tunnel without interception (type "connect", target host:port)
)

var kindNames = [...]string{KindHTTP: "http", KindMCP: "mcp", KindConnect: "connect"}

// String returns "http", "mcp" or "connect", and "" for the zero value.
func (k Kind) String() string {
	if k >= KindHTTP && k <= KindConnect {
		return kindNames[k]
	}
	return ""
}

// Call is one parsed request.
type Call struct {
	Kind Kind
	// Batch reports that the body was a JSON-RPC array.
	Batch bool
	// Messages is never empty: one for KindHTTP and KindConnect, one per
	// JSON-RPC message for KindMCP.
	Messages []Message
	// Route is the matching route rule, nil for none. For KindMCP it is the
	// route matching the MCP endpoint, used for the target of tool calls and
	// for MODIFY. It points into the Rules and must not be modified.
	Route *Route
}

// Actions reports whether any message is an action to evaluate. A call
// without actions is protocol traffic, forwarded without a decision.
func (c *Call) Actions() bool {
	for i := range c.Messages {
		if c.Messages[i].Action != nil {
			return true
		}
	}
	return false
}

// Message is one message of a call.
type Message struct {
	// ID is the JSON-RPC id as sent; nil for notifications, responses and
	// plain HTTP. It is a copy: it does not alias Request.Body.
	ID json.RawMessage
	// RPC is the JSON-RPC method; "" for plain HTTP and for JSON-RPC
	// responses sent by the client.
	RPC string
	// Tool is the tool name of a tools/call (for span names).
	Tool string
	// Action is the action to evaluate; nil for protocol traffic, which is
	// forwarded without a decision. Its Parameters are never nil.
	Action *governor.Action
}
