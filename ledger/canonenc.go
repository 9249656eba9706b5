package ledger

// The direct canonical encoder writes the RFC 8785 form of a Go value in one
// pass. Its output is by definition Canonicalize(json.Marshal(v)), byte for
// byte, and it fails where that fails: it makes encoding/json's choices
// (marshalers, addressability, tags, nil slices, cycles) and writes what
// Canonicalize makes of the result (members sorted by UTF-16 code units,
// minimal escapes, U+FFFD for invalid UTF-8, ECMAScript numbers). What it
// does not model it leaves to json.Marshal and Canonicalize.

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// canonEncoder writes canonical JSON, keeping a plan of each type it meets.
// Its zero value is ready; it is safe for concurrent use.
type canonEncoder struct {
	plans sync.Map // reflect.Type → *canonPlan
}

// canonPlan is how values of one type are written, made on first use (so
// plans can refer to each other, as recursive types need).
type canonPlan struct {
	enc  *canonEncoder
	t    reflect.Type
	once sync.Once
	fn   canonFunc
}

type canonFunc func(s *canonState, v reflect.Value) error

// canonState is the state of one encoding, and scratch space for the next.
type canonState struct {
	enc      *canonEncoder
	dst      []byte
	depth    int              // objects and arrays open (see jcsMaxDepth)
	ptrLevel int              // pointers, maps and slices entered (see enter)
	ptrSeen  map[any]struct{} // those remembered
	keys     []canonKey       // members of the maps being written, innermost last
	top      []canonMark      // the members of a top-level struct
	num      [24]byte         // an integer's digits
}

// canonKey is a map member: its key, its name as encoding/json writes it
// (set by members), and its value when read by reflection.
type canonKey struct {
	name, key string
	v         reflect.Value
}

// canonMark is where the value of a top-level member is, as offsets in the
// slice appendValue returns.
type canonMark struct {
	name       string
	start, end int
}

const canonCycleLevel = 1000 // encoding/json's startDetectingCyclesAfter

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumberType    = reflect.TypeFor[json.Number]()
)

// appendValue appends the canonical JSON of v to dst, with s as scratch
// (nil: fresh scratch). On error it returns dst as it was.
func (e *canonEncoder) appendValue(dst []byte, v any, s *canonState) ([]byte, error) {
	if s == nil {
		s = &canonState{}
	}
	s.enc, s.dst, s.depth, s.ptrLevel, s.top = e, dst, 0, 0, s.top[:0]
	err := s.any(v)
	out := s.dst
	s.enc, s.dst = nil, nil
	clear(s.ptrSeen)
	if cap(s.keys) > 1024 {
		s.keys = nil
	}
	if err != nil {
		return dst, err
	}
	return out, nil
}

// member returns where the value of the written struct's member name is.
func (s *canonState) member(name string) (start, end int, ok bool) {
	for _, m := range s.top {
		if m.name == name {
			return m.start, m.end, true
		}
	}
	return 0, 0, false
}

func (e *canonEncoder) plan(t reflect.Type) *canonPlan {
	if p, ok := e.plans.Load(t); ok {
		return p.(*canonPlan)
	}
	p, _ := e.plans.LoadOrStore(t, &canonPlan{enc: e, t: t})
	return p.(*canonPlan)
}

func (p *canonPlan) encode(s *canonState, v reflect.Value) error {
	p.once.Do(func() { p.fn = p.enc.build(p.t, true) })
	return p.fn(s, v)
}

// build makes the writer of type t as encoding/json's newTypeEncoder does;
// allowAddr is false for values that cannot be addressed.
func (e *canonEncoder) build(t reflect.Type, allowAddr bool) canonFunc {
	ptr := reflect.PointerTo(t)
	switch {
	case t.Kind() != reflect.Pointer && allowAddr && ptr.Implements(jsonMarshalerType):
		return marshalerFunc(false, e.build(t, false))
	case t.Implements(jsonMarshalerType):
		return marshalerFunc(false, nil)
	case t.Kind() != reflect.Pointer && allowAddr && ptr.Implements(textMarshalerType):
		return marshalerFunc(true, e.build(t, false))
	case t.Implements(textMarshalerType):
		return marshalerFunc(true, nil)
	}
	if f := kindFunc(t); f != nil {
		return f
	}
	switch t.Kind() {
	case reflect.Interface:
		return func(s *canonState, v reflect.Value) error {
			if v.IsNil() {
				return s.null()
			}
			return s.any(v.Interface())
		}
	case reflect.Struct:
		return e.structFunc(t)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return encFallback // integer or TextMarshaler keys, or an error
		}
		return e.mapFunc(t)
	case reflect.Slice:
		return e.sliceFunc(t)
	case reflect.Array:
		return e.arrayFunc(t)
	case reflect.Pointer:
		elem := e.plan(t.Elem())
		return func(s *canonState, v reflect.Value) error {
			if v.IsNil() {
				return s.null()
			}
			key, err := s.enter(v)
			if err == nil {
				err = elem.encode(s, v.Elem())
				s.leave(key)
			}
			return err
		}
	}
	return func(*canonState, reflect.Value) error { return fmt.Errorf("json: unsupported type: %s", t) }
}

// kindFunc returns the writer of t's kind for scalar kinds, else nil.
func kindFunc(t reflect.Type) canonFunc {
	switch t.Kind() {
	case reflect.Bool:
		return func(s *canonState, v reflect.Value) error { s.dst = strconv.AppendBool(s.dst, v.Bool()); return nil }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(s *canonState, v reflect.Value) error {
			s.int(strconv.AppendInt(s.num[:0], v.Int(), 10))
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(s *canonState, v reflect.Value) error {
			s.int(strconv.AppendUint(s.num[:0], v.Uint(), 10))
			return nil
		}
	case reflect.Float64:
		return func(s *canonState, v reflect.Value) error { return s.float(v.Float()) }
	case reflect.Float32:
		return encFallback // not in entries
	case reflect.String:
		if t == jsonNumberType {
			return func(s *canonState, v reflect.Value) error { return s.number(v.String()) }
		}
		return func(s *canonState, v reflect.Value) error { s.str(v.String()); return nil }
	}
	return nil
}

// elemFunc returns the writer of values of type t inside a struct, slice
// or map: the scalar writer directly when no method of t or *t changes it.
func (e *canonEncoder) elemFunc(t reflect.Type) canonFunc {
	p := reflect.PointerTo(t) // with t's methods
	if f := kindFunc(t); f != nil && !p.Implements(jsonMarshalerType) && !p.Implements(textMarshalerType) {
		return f
	}
	return e.plan(t).encode
}

// any writes the value in an interface (not addressable): common types of
// parameters directly, others by their plans.
func (s *canonState) any(x any) error {
	switch x := x.(type) {
	case nil:
		return s.null()
	case string:
		s.str(x)
	case float64:
		return s.float(x)
	case bool:
		s.dst = strconv.AppendBool(s.dst, x)
	case int64:
		s.int(strconv.AppendInt(s.num[:0], x, 10))
	case map[string]any:
		return s.mapAny(x)
	default:
		v := reflect.ValueOf(x)
		return s.enc.plan(v.Type()).encode(s, v)
	}
	return nil
}

func (s *canonState) null() error {
	s.dst = append(s.dst, "null"...)
	return nil
}

// str writes a string as Canonicalize writes what encoding/json writes:
// the minimal escapes, and U+FFFD for each byte that is not valid UTF-8.
func (s *canonState) str(x string) { s.dst = appendCanonString(s.dst, x) }

func appendCanonString(dst []byte, x string) []byte {
	b := unsafeBytes(x)
	dst = append(dst, '"')
	for i := 0; ; {
		j := plainRun(b, i)
		dst = append(dst, x[i:j]...)
		if j >= len(x) {
			return append(dst, '"')
		}
		if c := x[j]; c < utf8.RuneSelf { // a control character, '"' or '\\'
			dst = appendEscaped(dst, c)
			i = j + 1
			continue
		}
		r, n := utf8.DecodeRuneInString(x[j:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, x[j:j+n]...)
		}
		i = j + n
	}
}

func unsafeBytes(x string) []byte { return unsafe.Slice(unsafe.StringData(x), len(x)) }

// float writes a float64. encoding/json writes its shortest form, which
// Canonicalize reads back as the same double.
func (s *canonState) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 { // an integer: its digits
		s.dst = strconv.AppendInt(s.dst, int64(f), 10)
		return nil
	}
	s.dst = appendES6Number(s.dst, f)
	return nil
}

// int writes an integer's decimal text as Canonicalize does: as it is up to
// 15 digits (exact in a double), else as the nearest double.
func (s *canonState) int(text []byte) {
	if len(text) <= 15 || len(text) == 16 && text[0] == '-' {
		s.dst = append(s.dst, text...)
	} else {
		_ = s.numberText(text) // a valid number: no error
	}
}

// number writes a json.Number, which encoding/json writes as it is ("0" if
// empty) if it is a JSON number, as Canonicalize does.
func (s *canonState) number(n string) error {
	if n == "" {
		n = "0"
	}
	return s.numberText(unsafeBytes(n))
}

// numberText writes the JSON number text as Canonicalize does, or fails if
// text is not exactly one JSON number (as encoding/json's isValidNumber) or
// is beyond the double range.
func (s *canonState) numberText(text []byte) error {
	c := canonicalizer{src: text, dst: s.dst}
	if err := c.number(); err != nil {
		return err
	}
	if c.pos != len(text) {
		return fmt.Errorf("json: invalid number literal %q", text)
	}
	s.dst = c.dst
	return nil
}

// enter counts one more pointer, map or slice level; from canonCycleLevel
// levels on it remembers the value (the key returned) to report a cycle as
// encoding/json does. leave undoes it.
func (s *canonState) enter(v reflect.Value) (key any, err error) {
	if s.ptrLevel++; s.ptrLevel <= canonCycleLevel {
		return nil, nil
	}
	switch key = v.UnsafePointer(); v.Kind() { // a map: where it is
	case reflect.Pointer:
		key = v.Interface()
	case reflect.Slice: // where it starts and its length
		key = [2]any{key, v.Len()}
	}
	if _, ok := s.ptrSeen[key]; ok {
		return nil, fmt.Errorf("json: unsupported value: encountered a cycle via %s", v.Type())
	}
	if s.ptrSeen == nil {
		s.ptrSeen = map[any]struct{}{}
	}
	s.ptrSeen[key] = struct{}{}
	return key, nil
}

func (s *canonState) leave(key any) {
	s.ptrLevel--
	if key != nil {
		delete(s.ptrSeen, key)
	}
}

// open starts an object or array; close ends it.
func (s *canonState) open(b byte) error {
	if s.depth++; s.depth > jcsMaxDepth {
		return fmt.Errorf("ledger: canonicalize JSON: nesting deeper than %d", jcsMaxDepth)
	}
	s.dst = append(s.dst, b)
	return nil
}

func (s *canonState) close(b byte) {
	s.depth--
	s.dst = append(s.dst, b)
}

// canonField is a member of a struct's plan.
type canonField struct {
	name      string // as in the tag
	canon     string // canonical name and ':'
	index     int
	omitEmpty bool
	fn        canonFunc
}

// structFunc writes a struct's members in canonical order. Structs with
// what it does not model (embedded fields, the string and omitzero
// options, two fields of one name) are left to encoding/json.
func (e *canonEncoder) structFunc(t reflect.Type) canonFunc {
	var fields []canonField
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return encFallback
		}
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if !isValidTag(name) {
			name = sf.Name
		}
		if tagHas(opts, "string") || tagHas(opts, "omitzero") ||
			slices.ContainsFunc(fields, func(f canonField) bool { return f.name == name }) {
			return encFallback
		}
		fields = append(fields, canonField{name: name, canon: string(appendCanonString(nil, name)) + ":", index: i,
			omitEmpty: tagHas(opts, "omitempty"), fn: e.elemFunc(sf.Type)})
	}
	slices.SortFunc(fields, func(a, b canonField) int { return compareUTF16(unsafeBytes(a.name), unsafeBytes(b.name)) })
	return func(s *canonState, v reflect.Value) error {
		if err := s.open('{'); err != nil {
			return err
		}
		first, top := true, s.depth == 1
		for i := range fields {
			f := &fields[i]
			fv := v.Field(f.index)
			if f.omitEmpty && isEmptyValue(fv) {
				continue
			}
			if !first {
				s.dst = append(s.dst, ',')
			}
			first = false
			s.dst = append(s.dst, f.canon...)
			start := len(s.dst)
			if err := f.fn(s, fv); err != nil {
				return err
			}
			if top {
				s.top = append(s.top, canonMark{f.name, start, len(s.dst)})
			}
		}
		s.close('}')
		return nil
	}
}

// mapFunc writes a map with string keys.
func (e *canonEncoder) mapFunc(t reflect.Type) canonFunc {
	if t == reflect.TypeFor[map[string]any]() {
		return func(s *canonState, v reflect.Value) error { return s.mapAny(v.Interface().(map[string]any)) }
	}
	elem := e.elemFunc(t.Elem())
	return func(s *canonState, v reflect.Value) error {
		if v.IsNil() {
			return s.null()
		}
		key, err := s.enter(v)
		if err != nil {
			return err
		}
		base := len(s.keys)
		for it := v.MapRange(); it.Next(); {
			s.keys = append(s.keys, canonKey{key: it.Key().String(), v: it.Value()})
		}
		err = s.members(base, func(i int) error { return elem(s, s.keys[i].v) })
		s.leave(key)
		return err
	}
}

// mapAny writes a map[string]any (action parameters).
func (s *canonState) mapAny(m map[string]any) error {
	if m == nil {
		return s.null()
	}
	key, err := s.enter(reflect.ValueOf(m))
	if err != nil {
		return err
	}
	base := len(s.keys)
	for k := range m {
		s.keys = append(s.keys, canonKey{key: k})
	}
	err = s.members(base, func(i int) error { return s.any(m[s.keys[i].key]) })
	s.leave(key)
	return err
}

// members writes the object of the members keys[base:], sorted by name,
// and pops them; value(i) writes the value of keys[i].
func (s *canonState) members(base int, value func(i int) error) error {
	defer func() {
		clear(s.keys[base:])
		s.keys = s.keys[:base]
	}()
	ks := s.keys[base:]
	for i := range ks {
		if ks[i].name = ks[i].key; !utf8.ValidString(ks[i].key) {
			ks[i].name = string([]rune(ks[i].key)) // U+FFFD for each invalid byte
		}
	}
	slices.SortFunc(ks, func(a, b canonKey) int { return compareUTF16(unsafeBytes(a.name), unsafeBytes(b.name)) })
	for i := 1; i < len(ks); i++ {
		if ks[i].name == ks[i-1].name { // keys that differ only in invalid UTF-8
			return fmt.Errorf("ledger: canonicalize JSON: duplicate member name %q in object", ks[i].name)
		}
	}
	if err := s.open('{'); err != nil {
		return err
	}
	for i := base; i < base+len(ks); i++ {
		if i > base {
			s.dst = append(s.dst, ',')
		}
		s.str(s.keys[i].name)
		s.dst = append(s.dst, ':')
		if err := value(i); err != nil {
			return err
		}
	}
	s.close('}')
	return nil
}

// sliceFunc writes a slice: null if nil, base64 if of bytes (unless the
// pointer to the byte type has MarshalJSON or MarshalText), else an array.
func (e *canonEncoder) sliceFunc(t reflect.Type) canonFunc {
	if p := reflect.PointerTo(t.Elem()); t.Elem().Kind() == reflect.Uint8 &&
		!p.Implements(jsonMarshalerType) && !p.Implements(textMarshalerType) {
		return encFallback // base64; not in entries
	}
	array := e.arrayFunc(t)
	return func(s *canonState, v reflect.Value) error {
		if v.IsNil() {
			return s.null()
		}
		key, err := s.enter(v)
		if err == nil {
			err = array(s, v)
			s.leave(key)
		}
		return err
	}
}

// arrayFunc writes the elements of an array or slice.
func (e *canonEncoder) arrayFunc(t reflect.Type) canonFunc {
	elem := e.elemFunc(t.Elem())
	return func(s *canonState, v reflect.Value) error {
		if err := s.open('['); err != nil {
			return err
		}
		for i, n := 0, v.Len(); i < n; i++ {
			if i > 0 {
				s.dst = append(s.dst, ',')
			}
			if err := elem(s, v.Index(i)); err != nil {
				return err
			}
		}
		s.close(']')
		return nil
	}
}

// marshalerFunc writes what the value's MarshalJSON returns, canonicalized,
// or what its MarshalText returns as a string if text; null for a nil
// pointer or interface. If other is set, the methods are its address's,
// and other writes values that cannot be addressed.
func marshalerFunc(text bool, other canonFunc) canonFunc {
	return func(s *canonState, v reflect.Value) error {
		switch {
		case other != nil && !v.CanAddr():
			return other(s, v)
		case other != nil:
			v = v.Addr()
		case v.Kind() == reflect.Pointer && v.IsNil():
			return s.null()
		}
		x := v.Interface()
		var b []byte
		var err error
		if m, ok := x.(encoding.TextMarshaler); text && ok {
			b, err = m.MarshalText()
		} else if m, ok := x.(json.Marshaler); !text && ok {
			b, err = m.MarshalJSON()
		} else {
			return s.null() // a nil interface
		}
		switch {
		case err != nil:
			return fmt.Errorf("json: error calling the marshaler of %s: %w", v.Type(), err)
		case text:
			s.str(unsafe.String(unsafe.SliceData(b), len(b)))
			return nil
		}
		return s.appendJSON(b)
	}
}

// encFallback leaves a value to encoding/json and canonicalizes the result,
// passing an addressable value by its address as encoding/json reaches it.
func encFallback(s *canonState, v reflect.Value) error {
	var x any
	if v.CanAddr() {
		x = v.Addr().Interface()
	} else {
		x = v.Interface()
	}
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	return s.appendJSON(b)
}

// appendJSON writes the canonical form of the JSON value b, nested in
// s.depth containers.
func (s *canonState) appendJSON(b []byte) error {
	start := len(s.dst)
	out, err := Canonicalize(s.dst, b)
	if err != nil {
		return err
	}
	// A value nested n deep is at least 2n bytes long; if b may be too
	// deep here, Canonicalize it nested as deep.
	if d := s.depth; d+(len(out)-start)/2 > jcsMaxDepth {
		in := slices.Concat(bytes.Repeat([]byte{'['}, d), b, bytes.Repeat([]byte{']'}, d))
		if _, err := Canonicalize(nil, in); err != nil {
			return err
		}
	}
	s.dst = out
	return nil
}

// isEmptyValue is encoding/json's test for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// isValidTag is encoding/json's test of the name in a json tag.
func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// tagHas reports whether the options of a json tag include opt.
func tagHas(opts, opt string) bool { return slices.Contains(strings.Split(opts, ","), opt) }
