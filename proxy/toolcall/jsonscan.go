package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file walks JSON text in place: the parsers find the members they need
// without decoding (and copying) the rest. Except for firstValue and
// containerEnd, every function here expects text that json.Valid accepted.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first non-whitespace byte of b at or
// after i, or len(b).
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// startsContainer reports whether b, after whitespace, starts with '{' or '['.
func startsContainer(b []byte) bool {
	i := skipSpace(b, 0)
	return i < len(b) && (b[i] == '{' || b[i] == '[')
}

// firstValue returns the JSON object or array that b starts with (after
// whitespace) when it is complete and valid. What follows it is ignored, as a
// streaming decoder ignores it.
func firstValue(b []byte) ([]byte, bool) {
	i := skipSpace(b, 0)
	if i == len(b) || (b[i] != '{' && b[i] != '[') {
		return nil, false
	}
	end := containerEnd(b, i)
	if end < 0 || !json.Valid(b[i:end]) {
		return nil, false
	}
	return b[i:end], true
}

// containerEnd returns the index just after the bracket that closes the
// object or array starting at b[i], or -1 when b ends first. It tracks only
// strings and nesting, so it is safe on any input; whether the text is valid
// JSON is for json.Valid to say.
func containerEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := stringEnd(b, i)
			if j < 0 {
				return -1
			}
			i = j - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// stringEnd returns the index just after the string starting at b[i] (a
// quote), or -1 when b ends first.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // and the byte it escapes
		}
	}
	return -1
}

// valueEnd returns the index just after the valid JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '{', '[':
		return containerEnd(b, i)
	case '"':
		return stringEnd(b, i)
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// members yields the key (a string token, quotes included) and value of each
// member of a valid JSON object, in order.
func members(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		i := skipSpace(obj, 1)
		for i < len(obj) && obj[i] != '}' {
			ke := stringEnd(obj, i)
			key := obj[i:ke]
			i = skipSpace(obj, skipSpace(obj, ke)+1) // past the colon
			ve := valueEnd(obj, i)
			if !yield(key, obj[i:ve]) {
				return
			}
			i = skipSpace(obj, ve)
			if i < len(obj) && obj[i] == ',' {
				i = skipSpace(obj, i+1)
			}
		}
	}
}

// elements yields each element of a valid JSON array, in order.
func elements(arr []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		i := skipSpace(arr, 1)
		for i < len(arr) && arr[i] != ']' {
			ve := valueEnd(arr, i)
			if !yield(arr[i:ve]) {
				return
			}
			i = skipSpace(arr, ve)
			if i < len(arr) && arr[i] == ',' {
				i = skipSpace(arr, i+1)
			}
		}
	}
}

// plainString reports whether the string token tok needs no decoding: no
// escapes and valid UTF-8 (encoding/json replaces invalid bytes).
func plainString(tok []byte) bool {
	return bytes.IndexByte(tok, '\\') < 0 && utf8.Valid(tok)
}

// unquote decodes a JSON value that should be a string; ok is false when it
// is another kind of value.
func unquote(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", false
	}
	if plainString(tok) {
		return string(tok[1 : len(tok)-1]), true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return "", false
	}
	return s, true
}

// keyIs reports whether the key token tok decodes to name, without
// allocating in the common case.
func keyIs(tok []byte, name string) bool {
	if plainString(tok) {
		return string(tok[1:len(tok)-1]) == name
	}
	s, _ := unquote(tok)
	return s == name
}

// keyFolds reports whether the key token tok equals one of names under
// Unicode case folding without being equal to it: a key that encoding/json
// (and servers using it) would take for a field we read by its exact name.
func keyFolds(tok []byte, names ...string) bool {
	s, _ := unquote(tok)
	for _, n := range names {
		if s != n && strings.EqualFold(s, n) {
			return true
		}
	}
	return false
}

// isNull reports whether a valid JSON value is null.
func isNull(v []byte) bool { return string(v) == "null" }

// decodeObject decodes a valid JSON object with numbers as float64, the type
// the governor's CEL rules compare. A number beyond the range of a float64
// stays its decimal text, a string, so that a rule comparing it with a number
// fails (closed) instead of the whole object failing to decode and hiding
// every parameter.
func decodeObject(obj []byte) map[string]any {
	var m map[string]any
	err := json.Unmarshal(obj, &m)
	if err == nil {
		return m
	}
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) {
		return map[string]any{}
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	m = nil
	if dec.Decode(&m) != nil || m == nil {
		return map[string]any{}
	}
	for k, v := range m {
		m[k] = floatNumbers(v)
	}
	return m
}

// floatNumbers replaces each json.Number in v by a float64, or by its text
// when out of range.
func floatNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return string(x)
		}
		return f
	case map[string]any:
		for k, y := range x {
			x[k] = floatNumbers(y)
		}
	case []any:
		for i, y := range x {
			x[i] = floatNumbers(y)
		}
	}
	return v
}
