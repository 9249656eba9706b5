package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// decodeBody reads the request body (already capped by limitBody) and
// decodes it strictly into dst, a pointer to a struct: exactly one JSON
// object, no unknown fields, every value of the right type. Failures are
// *apiError values naming the offending field when it is known.
func decodeBody(r *http.Request, dst any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return errTooLarge()
		}
		return errInvalid("", "cannot read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errInvalid("", "request body is empty; want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, body, reflect.TypeOf(dst))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errInvalid("", "request body holds data after the JSON object")
	}
	return nil
}

// decodeError explains a json.Decoder failure.
func decodeError(err error, body []byte, t reflect.Type) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errInvalid("", "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errInvalid("", "malformed JSON: unexpected end of input")
	case errors.As(err, &typ):
		got, _, _ := strings.Cut(typ.Value, " ")
		if typ.Field == "" {
			return errInvalid("", "request body must be a JSON object, not %s", got)
		}
		field := typeErrorPath(body, t, typ.Field)
		if field == "" {
			field = typ.Field
		}
		return errInvalid(field, "%s must be %s, not %s", field, jsonKind(typ.Type), got)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if n, uerr := strconv.Unquote(name); uerr == nil {
			name = n
		}
		field := unknownFieldPath(body, t, name)
		if field == "" {
			field = name
		}
		return errInvalid(field, "unknown field %s", field)
	}
	return errInvalid("", "invalid JSON: %s", err.Error())
}

// jsonKind names the JSON type that a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a JSON value"
}

// The decoder names a refused field only partly: an unknown field by its
// name alone, a type error by its path without map keys or list indices
// ("time_windows.start_hour"). fieldPath walks the document against the
// target type to find the full path ("time_windows.deploy.start_hour") of the
// first member that matches; it returns "" when none does.

// unknownFieldPath places the unknown field called name.
func unknownFieldPath(body []byte, t reflect.Type, name string) string {
	return fieldPath(body, t, func(m member) bool { return m.t == nil && m.key == name })
}

// typeErrorPath places the member at the decoder's path bare whose value does
// not fit its type.
func typeErrorPath(body []byte, t reflect.Type, bare string) string {
	return fieldPath(body, t, func(m member) bool { return m.t != nil && m.bare == bare && !fits(m.v, m.t) })
}

// member is one object member or list element of the document: its key (""
// for an element), full path, path without map keys and indices, value, and
// the Go type it decodes into (nil for an unknown field).
type member struct {
	key, full, bare string
	v               any
	t               reflect.Type
}

func fieldPath(body []byte, t reflect.Type, match func(member) bool) string {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	p, _ := walk(doc, t, "", "", match)
	return p
}

// walk visits the object members and list elements of v, which decodes into
// t, depth first and in key order, until match accepts one.
func walk(v any, t reflect.Type, full, bare string, match func(member) bool) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			m := member{key: k, full: dotted(full, k), bare: bare, v: obj[k]}
			if t.Kind() == reflect.Struct {
				m.bare = dotted(bare, k)
				if f, known := jsonField(t, k); known {
					m.t = f.Type
				}
			} else {
				m.t = t.Elem()
			}
			if match(m) {
				return m.full, true
			}
			if m.t != nil {
				if p, ok := walk(m.v, m.t, m.full, m.bare, match); ok {
					return p, true
				}
			}
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return "", false
		}
		for i, e := range arr {
			m := member{full: full + "[" + strconv.Itoa(i) + "]", bare: bare, v: e, t: t.Elem()}
			if match(m) {
				return m.full, true
			}
			if p, ok := walk(m.v, m.t, m.full, m.bare, match); ok {
				return p, true
			}
		}
	}
	return "", false
}

func dotted(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// fits reports whether the JSON value v (as decoded into any) can decode into
// a Go value of type t.
func fits(v any, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || t.Kind() == reflect.Interface {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		return t.Kind() == reflect.Struct || t.Kind() == reflect.Map
	case []any:
		return t.Kind() == reflect.Slice || t.Kind() == reflect.Array
	case string:
		return t.Kind() == reflect.String
	case bool:
		return t.Kind() == reflect.Bool
	case float64:
		switch t.Kind() {
		case reflect.Float32, reflect.Float64:
			return true
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return x == math.Trunc(x) && !reflect.Zero(t).OverflowInt(int64(x))
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return x >= 0 && x == math.Trunc(x) && !reflect.Zero(t).OverflowUint(uint64(x))
		}
	}
	return false
}

// jsonField returns the field of struct type t that the JSON key decodes
// into, matching names as encoding/json does (exactly, else ignoring case).
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	var fold reflect.StructField
	folded := false
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if name == key {
			return f, true
		}
		if !folded && strings.EqualFold(name, key) {
			fold, folded = f, true
		}
	}
	return fold, folded
}
