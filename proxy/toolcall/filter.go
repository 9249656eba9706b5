package toolcall

import (
	"bytes"
	"encoding/json"
)

// FilterToolsList rewrites a JSON-RPC tools/list result — a response object
// whose "result" holds a "tools" array, or an array of messages among which
// such responses — keeping only the tools for which allow(name) is true (a
// tool without a string name is asked for as ""). The order of the tools and
// every byte outside the rewritten arrays are kept, and so is each kept tool
// as sent. ok reports whether body held a tools/list result; when it did not,
// or when every tool is allowed, body itself is returned.
func FilterToolsList(body []byte, allow func(name string) bool) (out []byte, ok bool) {
	start := skipSpace(body, 0)
	if start == len(body) || (body[start] != '{' && body[start] != '[') {
		return body, false
	}
	end := containerEnd(body, start)
	if end < 0 || skipSpace(body, end) != len(body) || !json.Valid(body[start:end]) {
		return body, false
	}
	v := body[start:end]
	var edits []edit
	if v[0] == '{' {
		ok = filterResponse(body, v, allow, &edits)
	} else {
		for e := range elements(v) {
			if e[0] == '{' && filterResponse(body, e, allow, &edits) {
				ok = true
			}
		}
	}
	if len(edits) == 0 {
		return body, ok
	}
	out = make([]byte, 0, len(body))
	prev := 0
	for _, e := range edits {
		out = append(out, body[prev:e.start]...)
		out = append(out, e.repl...)
		prev = e.end
	}
	return append(out, body[prev:]...), ok
}

// edit replaces body[start:end] by repl.
type edit struct {
	start, end int
	repl       []byte
}

// filterResponse filters the tools arrays of one message (a valid object
// inside body) and reports whether it is a tools/list result.
func filterResponse(body, msg []byte, allow func(string) bool, edits *[]edit) bool {
	found := false
	for k, res := range members(msg) {
		if !keyIs(k, "result") || res[0] != '{' {
			continue
		}
		for k, tools := range members(res) {
			if !keyIs(k, "tools") || tools[0] != '[' {
				continue
			}
			found = true
			if repl, changed := filterTools(tools, allow); changed {
				start := offset(body, tools)
				*edits = append(*edits, edit{start: start, end: start + len(tools), repl: repl})
			}
		}
	}
	return found
}

// filterTools returns the array of the allowed tools, and whether any was
// dropped.
func filterTools(tools []byte, allow func(string) bool) ([]byte, bool) {
	var kept [][]byte
	dropped := false
	for t := range elements(tools) {
		if allow(toolName(t)) {
			kept = append(kept, t)
		} else {
			dropped = true
		}
	}
	if !dropped {
		return nil, false
	}
	return append(append([]byte{'['}, bytes.Join(kept, []byte{','})...), ']'), true
}

// toolName returns the "name" of a tool (a valid JSON value), "" when it has
// no string name. The last "name" wins, as in most JSON readers.
func toolName(tool []byte) string {
	name := ""
	if tool[0] != '{' {
		return name
	}
	for k, v := range members(tool) {
		if keyIs(k, "name") {
			name, _ = unquote(v)
		}
	}
	return name
}

// offset returns the index of sub in parent, of which it is a subslice.
func offset(parent, sub []byte) int { return cap(parent) - cap(sub) }
