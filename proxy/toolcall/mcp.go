package toolcall

import (
	"bytes"

	"github.com/vigilhq/vigil/governor"
)

// mcpEnv is what every message of one MCP request shares.
type mcpEnv struct {
	method string // the HTTP method as sent
	target string // host + path of the endpoint
	route  *Route // the route matching the endpoint, or nil
}

// parseMCP reads a valid JSON object or array as a JSON-RPC 2.0 message or
// batch. ok is false when it is not one (then the request is plain HTTP).
func parseMCP(v []byte, env mcpEnv) (Call, bool) {
	// Cheap test first: a JSON-RPC message names its version, and "jsonrpc"
	// can only be spelt otherwise with an escape.
	if !bytes.Contains(v, []byte(`"jsonrpc"`)) && bytes.IndexByte(v, '\\') < 0 {
		return Call{}, false
	}
	if v[0] == '{' {
		m, ok := parseMessage(v, env)
		if !ok {
			return Call{}, false
		}
		return Call{Kind: KindMCP, Messages: []Message{m}, Route: env.route}, true
	}
	var msgs []Message
	for e := range elements(v) {
		if e[0] != '{' {
			return Call{}, false
		}
		m, ok := parseMessage(e, env)
		if !ok {
			return Call{}, false
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return Call{}, false
	}
	return Call{Kind: KindMCP, Batch: true, Messages: msgs, Route: env.route}, true
}

// envelopeKeys are the members of a JSON-RPC message that matter.
var envelopeKeys = []string{"jsonrpc", "method", "id", "params", "result", "error"}

// parseMessage reads one JSON-RPC message (a valid JSON object). A message
// that a lenient server could read otherwise than we do — a member named
// like one of envelopeKeys in another case, which encoding/json would take
// for it — is not accepted.
func parseMessage(obj []byte, env mcpEnv) (Message, bool) {
	var version, method, id, params, result, rpcErr []byte
	for k, v := range members(obj) {
		switch {
		case keyIs(k, "jsonrpc"):
			version = v
		case keyIs(k, "method"):
			method = v
		case keyIs(k, "id"):
			id = v
		case keyIs(k, "params"):
			params = v
		case keyIs(k, "result"):
			result = v
		case keyIs(k, "error"):
			rpcErr = v
		case keyFolds(k, envelopeKeys...):
			return Message{}, false
		}
	}
	if s, ok := unquote(version); !ok || s != "2.0" {
		return Message{}, false
	}
	if method == nil {
		// A response sent by the client (to a server's request).
		return Message{}, id != nil && (result != nil || rpcErr != nil)
	}
	name, ok := unquote(method)
	if !ok {
		return Message{}, false
	}
	m := Message{RPC: name}
	if id != nil {
		m.ID = bytes.Clone(id)
	}
	var a *governor.Action
	switch name {
	case "tools/call":
		a, ok = toolsCall(params, env)
		if ok {
			m.Tool = a.Type
		}
	case "resources/read":
		a, ok = resourcesRead(params)
	case "prompts/get":
		a, ok = promptsGet(params)
	default:
		return m, true // protocol traffic
	}
	if !ok {
		return Message{}, false
	}
	a.Source, a.Method = "proxy", env.method
	if env.route != nil {
		a.Reversibility = env.route.Reversibility
	}
	m.Action = a
	return m, true
}

// toolsCall: type params.name, parameters params.arguments, target the
// route's or the endpoint.
func toolsCall(params []byte, env mcpEnv) (*governor.Action, bool) {
	name, args, ok := nameArgs(params, "name")
	if !ok {
		return nil, false
	}
	a := &governor.Action{Type: name, Target: env.target, Parameters: args}
	if env.route != nil && env.route.Target != "" {
		a.Target = env.route.Target
	}
	return a, true
}

// resourcesRead: type read, target params.uri.
func resourcesRead(params []byte) (*governor.Action, bool) {
	uri, _, ok := nameArgs(params, "uri")
	if !ok {
		return nil, false
	}
	return &governor.Action{Type: "read", Target: uri, Parameters: map[string]any{"uri": uri}}, true
}

// promptsGet: type read, target "prompt:" + params.name, parameters
// params.arguments and the name (the name wins over an argument "name": it is
// what parameters.name means for a prompt).
func promptsGet(params []byte) (*governor.Action, bool) {
	name, args, ok := nameArgs(params, "name")
	if !ok {
		return nil, false
	}
	args["name"] = name
	return &governor.Action{Type: "read", Target: "prompt:" + name, Parameters: args}, true
}

// nameArgs reads params, which must be an object holding a non-empty string
// key and optionally an object "arguments" (absent or null: empty).
func nameArgs(params []byte, key string) (string, map[string]any, bool) {
	if len(params) == 0 || params[0] != '{' {
		return "", nil, false
	}
	var nameTok, argsTok []byte
	for k, v := range members(params) {
		switch {
		case keyIs(k, key):
			nameTok = v
		case keyIs(k, "arguments"):
			argsTok = v
		case keyFolds(k, key, "arguments"):
			return "", nil, false
		}
	}
	name, ok := unquote(nameTok)
	if !ok || name == "" {
		return "", nil, false
	}
	switch {
	case argsTok == nil || isNull(argsTok):
		return name, map[string]any{}, true
	case argsTok[0] == '{':
		return name, decodeObject(argsTok), true
	}
	return "", nil, false
}
