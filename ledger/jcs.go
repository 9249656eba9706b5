package ledger

// RFC 8785 JSON Canonicalization Scheme (JCS): the byte form an entry is
// hashed in. Canonicalize is a single-pass byte scanner that appends the
// canonical form straight to dst; it never decodes into interface values.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"
)

// jcsMaxDepth is the deepest nesting of objects and arrays Canonicalize
// accepts (the same limit as encoding/json).
const jcsMaxDepth = 10000

// jcsError reports why src is not a JSON value RFC 8785 can canonicalize.
type jcsError struct {
	off int // byte offset in src
	msg string
}

func (e *jcsError) Error() string {
	return fmt.Sprintf("ledger: canonicalize JSON: %s at offset %d", e.msg, e.off)
}

// Canonicalize appends the RFC 8785 canonical form of the single JSON value
// in src to dst and returns the extended slice. Object members are sorted
// by their names as UTF-16 code unit sequences; there is no insignificant
// whitespace; strings are written as UTF-8 with the minimal escapes of
// RFC 8785 §3.2.2.2; numbers are written as ECMAScript writes the nearest
// IEEE-754 double (§3.2.2.3).
//
// src must be I-JSON (RFC 7493): Canonicalize returns an error, and dst
// with its original length, for invalid JSON, data after the value,
// duplicate member names, invalid UTF-8, lone surrogate escapes, numbers
// beyond the double range (such as 1e400) and nesting deeper than 10000.
// On error, bytes of dst's backing array past its length may be changed.
// dst and src must not overlap.
func Canonicalize(dst, src []byte) ([]byte, error) {
	return canonicalize(dst, src, 8*len(src)+4096)
}

// canonicalize is Canonicalize moving at most budget bytes to put objects'
// members in order in place (see canonicalizer).
func canonicalize(dst, src []byte, budget int) ([]byte, error) {
	// Two or three allocations whatever the size of src (escape analysis
	// cannot keep these on the stack because c's methods store into them).
	c := canonicalizer{
		src: src, dst: dst, budget: budget,
		members: make([]jcsMember, 0, 32),
		objects: make([]jcsObject, 0, min(len(src)/96, 1024)+8),
	}
	if err := c.value(0); err != nil {
		return dst, err
	}
	c.skipSpace()
	if c.pos != len(src) {
		return dst, c.errorf("data after the JSON value")
	}
	if c.order != nil { // some object is not in order
		end := len(c.dst)
		c.dst = c.emit(c.dst, len(dst), end, 0)
		copy(c.dst[len(dst):], c.dst[end:])
		c.dst = c.dst[:end]
	}
	return c.dst, nil
}

// canonicalizer is the state of one Canonicalize call.
type canonicalizer struct {
	src []byte
	pos int // next byte of src to read
	dst []byte
	// members holds the members of every object being written, innermost
	// object last; an object pops its members when it is done.
	members []jcsMember
	// names holds the decoded names of members whose canonical name
	// contains escapes, with the same stack discipline as members.
	names []byte
	// An object whose members are not in canonical order is put in order
	// when it ends, by copying its members past the end of dst and back
	// in order, as long as that moves at most budget bytes in all (moved
	// so far). Past that (deep objects out of order would move their
	// contents once per level), objects are put in order at the end
	// instead: emit writes the value again with each byte moved once.
	// objects holds the objects in the order they start; order holds the
	// members of the objects emit puts in order, sorted, object by object
	// (nil until there is one).
	budget, moved int
	objects       []jcsObject
	order         []jcsSpan
}

// jcsObject is an object of the first pass: dst[start:end] is the object
// as written, objects[k+1:next] the objects inside it (k is its index),
// and, if n > 0, emit is to put its members in the order
// order[first:first+n].
type jcsObject struct{ start, end, next, first, n int }

// jcsSpan is the range dst[start:end] of one member of an object not in
// order, as the first pass wrote it; objects[obj:] are the objects from
// its start on.
type jcsSpan struct{ start, end, obj int }

// jcsMember is one member of an object being written: dst[start:end] is
// its canonical `"name":value`, and its decoded name is
// dst[nameStart:nameEnd], or names[nameStart:nameEnd] if inNames.
// objects[obj:] are the objects from its start on.
type jcsMember struct {
	obj int
	// prefix is the first 8 bytes of the decoded name, big-endian and
	// zero-padded: members with different prefixes sort by prefix, unless
	// the object has a name with a byte of 0xEE or more in its prefix
	// (see compareUTF16).
	prefix             uint64
	start, end         int
	nameStart, nameEnd int
	inNames            bool
}

// namePrefix returns the prefix of name for jcsMember, and whether it
// orders names by UTF-16 code units: it does if it has no byte of
// 0xEE or more (a character from U+E000 or a surrogate pair).
func namePrefix(name []byte) (prefix uint64, ordered bool) {
	if len(name) >= 8 {
		prefix = binary.BigEndian.Uint64(name)
	} else {
		for _, b := range name {
			prefix = prefix<<8 | uint64(b)
		}
		prefix <<= 8 * (8 - len(name))
	}
	if prefix&0x8080808080808080 == 0 { // ASCII
		return prefix, true
	}
	for p := prefix; p != 0; p >>= 8 {
		if byte(p) >= 0xEE {
			return prefix, false
		}
	}
	return prefix, true
}

func (c *canonicalizer) errorf(format string, args ...any) error {
	return &jcsError{off: c.pos, msg: fmt.Sprintf(format, args...)}
}

func (c *canonicalizer) skipSpace() {
	if c.pos < len(c.src) && c.src[c.pos] > ' ' {
		return
	}
	c.pos = skipSpace(c.src, c.pos)
}

// skipSpace returns the index of the first byte from src[i] on that is
// not JSON whitespace, or len(src).
func skipSpace(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\n', '\t', '\r':
			i++
		default:
			return i
		}
		// Indentation: skip a run of spaces 8 bytes at a time.
		for i+8 <= len(src) {
			if x := binary.LittleEndian.Uint64(src[i:]) ^ swarOnes*' '; x != 0 {
				i += bits.TrailingZeros64(x) >> 3
				break
			}
			i += 8
		}
	}
	return i
}

// value writes the value at c.pos, which is nested in depth containers.
func (c *canonicalizer) value(depth int) error {
	c.skipSpace()
	if c.pos >= len(c.src) {
		return c.errorf("unexpected end of input")
	}
	switch b := c.src[c.pos]; b {
	case '{':
		return c.object(depth + 1)
	case '[':
		return c.array(depth + 1)
	case '"':
		_, err := c.str()
		return err
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	default:
		if b == '-' || '0' <= b && b <= '9' {
			return c.number()
		}
		return c.errorf("invalid character %q looking for a value", b)
	}
}

func (c *canonicalizer) literal(lit string) error {
	if !bytes.HasPrefix(c.src[c.pos:], []byte(lit)) {
		return c.errorf("invalid literal, want %s", lit)
	}
	c.pos += len(lit)
	c.dst = append(c.dst, lit...)
	return nil
}

func (c *canonicalizer) array(depth int) error {
	if depth > jcsMaxDepth {
		return c.errorf("nesting deeper than %d", jcsMaxDepth)
	}
	c.pos++ // '['
	c.dst = append(c.dst, '[')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == ']' {
		c.pos++
		c.dst = append(c.dst, ']')
		return nil
	}
	for {
		if err := c.value(depth); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.src) {
			return c.errorf("unexpected end of input in array")
		}
		switch c.src[c.pos] {
		case ',':
			c.pos++
			c.dst = append(c.dst, ',')
		case ']':
			c.pos++
			c.dst = append(c.dst, ']')
			return nil
		default:
			return c.errorf("invalid character %q after array element", c.src[c.pos])
		}
	}
}

func (c *canonicalizer) object(depth int) error {
	if depth > jcsMaxDepth {
		return c.errorf("nesting deeper than %d", jcsMaxDepth)
	}
	c.pos++ // '{'
	c.dst = append(c.dst, '{')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		c.dst = append(c.dst, '}')
		return nil
	}
	base, namesBase := len(c.members), len(c.names)
	k := len(c.objects)
	c.objects = append(c.objects, jcsObject{start: len(c.dst) - 1})
	byPrefix := true // whether prefixes order the members' names
	for {
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return c.errorf("expected a member name")
		}
		if len(c.members) > base {
			c.dst = append(c.dst, ',')
		}
		m := jcsMember{start: len(c.dst), obj: len(c.objects)}
		escaped, err := c.str()
		if err != nil {
			return err
		}
		m.nameStart, m.nameEnd = m.start+1, len(c.dst)-1
		if escaped {
			n := len(c.names)
			c.names = appendUnescaped(c.names, c.dst[m.nameStart:m.nameEnd])
			m.nameStart, m.nameEnd, m.inNames = n, len(c.names), true
		}
		var ordered bool
		m.prefix, ordered = namePrefix(c.name(&m))
		byPrefix = byPrefix && ordered
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return c.errorf("expected ':' after member name")
		}
		c.pos++
		c.dst = append(c.dst, ':')
		if err := c.value(depth); err != nil {
			return err
		}
		m.end = len(c.dst)
		c.members = append(c.members, m)
		c.skipSpace()
		if c.pos >= len(c.src) {
			return c.errorf("unexpected end of input in object")
		}
		if b := c.src[c.pos]; b == '}' {
			break
		} else if b != ',' {
			return c.errorf("invalid character %q after object member", b)
		}
		c.pos++
	}
	if err := c.sortMembers(k, c.members[base:], byPrefix); err != nil {
		return err
	}
	c.members, c.names = c.members[:base], c.names[:namesBase]
	c.pos++ // '}'
	c.dst = append(c.dst, '}')
	c.objects[k].end, c.objects[k].next = len(c.dst), len(c.objects)
	return nil
}

// sortMembers sorts the members ms of objects[k] by name, rejects
// duplicate names, and puts the members in order in dst or records the
// order for emit. byPrefix tells whether the members' prefixes order their
// names.
func (c *canonicalizer) sortMembers(k int, ms []jcsMember, byPrefix bool) error {
	sorted := true
	for i := 1; i < len(ms); i++ {
		d := c.compare(&ms[i-1], &ms[i], byPrefix)
		if d == 0 {
			return c.duplicate(&ms[i])
		}
		if d > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	if len(ms) <= 24 {
		// Insertion sort: objects are mostly small.
		for i := 1; i < len(ms); i++ {
			m := ms[i]
			j := i
			for ; j > 0; j-- {
				p := &ms[j-1]
				if byPrefix && m.prefix != p.prefix {
					if m.prefix > p.prefix {
						break
					}
				} else if c.compareNames(&m, p) > 0 {
					break
				}
				ms[j] = *p
			}
			ms[j] = m
		}
	} else {
		slices.SortFunc(ms, func(a, b jcsMember) int { return c.compare(&a, &b, byPrefix) })
	}
	for i := 1; i < len(ms); i++ {
		if c.compare(&ms[i-1], &ms[i], byPrefix) == 0 {
			return c.duplicate(&ms[i])
		}
	}
	if first := c.objects[k].start + 1; c.order == nil && c.moved+len(c.dst)-first <= c.budget {
		// Copy the members past the end of dst, then back in order.
		end := len(c.dst)
		c.moved += end - first
		c.dst = append(c.dst, c.dst[first:end]...)
		dst, shift, w := c.dst, end-first, first
		for i := range ms {
			if i > 0 {
				dst[w] = ','
				w++
			}
			w += copy(dst[w:], dst[ms[i].start+shift:ms[i].end+shift])
		}
		c.dst = dst[:end]
		return nil
	}
	if c.order == nil {
		c.order = make([]jcsSpan, 0, min(len(c.src)/32, 4096)+len(ms))
	}
	c.objects[k].first, c.objects[k].n = len(c.order), len(ms)
	for i := range ms {
		c.order = append(c.order, jcsSpan{ms[i].start, ms[i].end, ms[i].obj})
	}
	return nil
}

// emit appends dst[start:end], as the first pass wrote it, to dst with the
// members of the objects in it in canonical order; objects[k:] are the
// objects from start on.
func (c *canonicalizer) emit(dst []byte, start, end, k int) []byte {
	for k < len(c.objects) && c.objects[k].start < end {
		o := &c.objects[k]
		if o.n == 0 { // in order; look inside
			k++
			continue
		}
		dst = append(dst, dst[start:o.start]...)
		dst = append(dst, '{')
		for i, m := range c.order[o.first : o.first+o.n] {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = c.emit(dst, m.start, m.end, m.obj)
		}
		dst = append(dst, '}')
		start, k = o.end, o.next
	}
	return append(dst, dst[start:end]...)
}

// compare compares the names of members a and b, first by their prefixes
// if byPrefix.
func (c *canonicalizer) compare(a, b *jcsMember, byPrefix bool) int {
	if byPrefix && a.prefix != b.prefix {
		return cmp.Compare(a.prefix, b.prefix)
	}
	return c.compareNames(a, b)
}

func (c *canonicalizer) compareNames(a, b *jcsMember) int {
	return compareUTF16(c.name(a), c.name(b))
}

func (c *canonicalizer) duplicate(m *jcsMember) error {
	return c.errorf("duplicate member name %q in object", c.name(m))
}

func (c *canonicalizer) name(m *jcsMember) []byte {
	if m.inNames {
		return c.names[m.nameStart:m.nameEnd]
	}
	return c.dst[m.nameStart:m.nameEnd]
}

// compareUTF16 compares two valid UTF-8 strings as sequences of UTF-16
// code units (RFC 8785 §3.2.3). That is UTF-8 byte order except that
// characters above U+FFFF (surrogate pairs) sort before U+E000–U+FFFF.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return cmp.Compare(a[i], b[i])
	}
	// Both strings share the bytes before i, so both are at the same
	// position in a character; back up to its first byte.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	return cmp.Compare(utf16Order(ra), utf16Order(rb))
}

// utf16Order maps a character to a key that orders characters as their
// UTF-16 encodings: U+E000–U+FFFF move above the supplementary planes,
// whose leading surrogates (U+D800–U+DBFF) sort below U+E000.
func utf16Order(r rune) rune {
	if r >= 0xE000 && r <= 0xFFFF {
		return r + 0x110000
	}
	return r
}

// appendUnescaped appends the decoded text of the canonical string content
// s, which holds only the escapes str writes.
func appendUnescaped(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b != '\\' || i+1 >= len(s) {
			dst = append(dst, b)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 't':
			dst = append(dst, '\t')
		case 'n':
			dst = append(dst, '\n')
		case 'f':
			dst = append(dst, '\f')
		case 'r':
			dst = append(dst, '\r')
		case 'u': // \u00xx
			if i+4 < len(s) {
				dst = append(dst, hexValue(s[i+3])<<4|hexValue(s[i+4]))
				i += 4
			}
		default: // '"' and '\\'
			dst = append(dst, s[i])
		}
	}
	return dst
}

// jcsPlain marks the bytes a string's content copies unchanged: printable
// ASCII except '"' and '\\'.
var jcsPlain = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// str writes the string at c.pos in canonical form and reports whether the
// canonical form contains an escape.
func (c *canonicalizer) str() (escaped bool, err error) {
	src, start := c.src, c.pos
	i := plainRun(src, start+1)
	if i < len(src) && src[i] == '"' { // nothing to decode or escape
		c.pos, c.dst = i+1, append(c.dst, src[start:i+1]...)
		return false, nil
	}
	dst := append(c.dst, src[start:i]...)
	for {
		j := plainRun(src, i)
		dst = append(dst, src[i:j]...)
		i = j
		if i >= len(src) {
			c.pos, c.dst = i, dst
			return false, c.errorf("unterminated string")
		}
		switch b := src[i]; {
		case b == '"':
			c.pos, c.dst = i+1, append(dst, '"')
			return escaped, nil
		case b == '\\':
			c.pos, c.dst = i, dst
			r, n, err := c.escape(i)
			if err != nil {
				return false, err
			}
			i += n
			if r < 0x20 || r == '"' || r == '\\' {
				escaped = true
				dst = appendEscaped(dst, byte(r))
			} else {
				dst = utf8.AppendRune(dst, r)
			}
		case b < 0x20:
			c.pos, c.dst = i, dst
			return false, c.errorf("control character %#02x in string", b)
		default:
			j := i
			for j < len(src) && src[j] >= utf8.RuneSelf {
				r, n := utf8.DecodeRune(src[j:])
				if r == utf8.RuneError && n == 1 {
					c.pos, c.dst = j, dst
					return false, c.errorf("invalid UTF-8 in string")
				}
				j += n
			}
			dst = append(dst, src[i:j]...)
			i = j
		}
	}
}

const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// plainRun returns the index of the first byte from src[i] on that a
// string's content cannot copy unchanged (see jcsPlain), or len(src). It
// tests 8 bytes at a time: for each test the lowest flagged byte is exact.
func plainRun(src []byte, i int) int {
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		q := x ^ (swarOnes * '"')
		bs := x ^ (swarOnes * '\\')
		m := (x-swarOnes*0x20)&^x | (q-swarOnes)&^q | (bs-swarOnes)&^bs | x
		if m &= swarHigh; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(src) && jcsPlain[src[i]] {
		i++
	}
	return i
}

// escape decodes the escape sequence at src[i] ('\\'), joining a surrogate
// pair, and returns the character and the escape's length.
func (c *canonicalizer) escape(i int) (rune, int, error) {
	src := c.src
	if i+1 >= len(src) {
		return 0, 0, c.errorf("unterminated string")
	}
	switch src[i+1] {
	case '"', '\\', '/':
		return rune(src[i+1]), 2, nil
	case 'b':
		return '\b', 2, nil
	case 'f':
		return '\f', 2, nil
	case 'n':
		return '\n', 2, nil
	case 'r':
		return '\r', 2, nil
	case 't':
		return '\t', 2, nil
	case 'u':
		r, ok := hex4(src[i+2:])
		if !ok {
			return 0, 0, c.errorf("invalid \\u escape")
		}
		switch {
		case r < 0xD800 || r > 0xDFFF:
			return r, 6, nil
		case r <= 0xDBFF && len(src) >= i+12 && src[i+6] == '\\' && src[i+7] == 'u':
			lo, ok := hex4(src[i+8:])
			if ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, nil
			}
		}
		return 0, 0, c.errorf("lone surrogate \\u%04x in string", r)
	default:
		return 0, 0, c.errorf("invalid escape \\%c in string", src[i+1])
	}
}

// hex4 decodes four hex digits at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, b := range s[:4] {
		v := hexValue(b)
		if v == 0xFF {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// hexValue returns the value of a hex digit, or 0xFF.
func hexValue(b byte) byte {
	switch {
	case '0' <= b && b <= '9':
		return b - '0'
	case 'a' <= b && b <= 'f':
		return b - 'a' + 10
	case 'A' <= b && b <= 'F':
		return b - 'A' + 10
	}
	return 0xFF
}

// appendEscaped appends the RFC 8785 escape of a control character, '"'
// or '\\'.
func appendEscaped(dst []byte, b byte) []byte {
	switch b {
	case '\b':
		return append(dst, `\b`...)
	case '\t':
		return append(dst, `\t`...)
	case '\n':
		return append(dst, `\n`...)
	case '\f':
		return append(dst, `\f`...)
	case '\r':
		return append(dst, `\r`...)
	case '"':
		return append(dst, `\"`...)
	case '\\':
		return append(dst, `\\`...)
	}
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
}

// number writes the number at c.pos as ECMAScript's Number.prototype.
// toString writes the nearest double.
func (c *canonicalizer) number() error {
	src := c.src
	start := c.pos
	i := start
	if src[i] == '-' {
		i++
	}
	// Integer part: "0" or a non-zero digit and more digits.
	intStart := i
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && '1' <= src[i] && src[i] <= '9':
		i++
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
	default:
		c.pos = i
		return c.errorf("invalid number")
	}
	digits := i - intStart
	fracStart := i // after the '.', if any
	if i < len(src) && src[i] == '.' {
		i++
		fracStart = i
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
		if i == fracStart {
			c.pos = i
			return c.errorf("invalid number: no digits after '.'")
		}
		digits += i - fracStart
	}
	hasExp := i < len(src) && (src[i] == 'e' || src[i] == 'E')
	if hasExp {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		j := i
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
		if i == j {
			c.pos = i
			return c.errorf("invalid number: no digits in exponent")
		}
	}
	c.pos = i
	// Without exponent and with at most 15 digits, the number is the
	// shortest decimal of its nearest double (every decimal of up to 15
	// significant digits round-trips through a double), so its canonical
	// form is itself without trailing fraction zeros, unless it is zero or
	// below 1e-6 (which ECMAScript writes with an exponent).
	if !hasExp && digits <= 15 {
		end := i
		if fracStart < i { // has a fraction
			for src[end-1] == '0' {
				end--
			}
			if end == fracStart {
				end-- // drop the '.'
			}
		}
		if src[intStart] != '0' {
			c.dst = append(c.dst, src[start:end]...)
			return nil
		}
		if end == intStart+1 { // zero
			c.dst = append(c.dst, '0')
			return nil
		}
		if nz := fracStart; end-nz > 0 {
			for src[nz] == '0' {
				nz++
			}
			if nz-fracStart <= 5 { // at least 1e-6
				c.dst = append(c.dst, src[start:end]...)
				return nil
			}
		}
	}
	f, err := strconv.ParseFloat(string(src[start:i]), 64)
	if err != nil || math.IsInf(f, 0) {
		c.pos = start
		return c.errorf("number %s is out of the double range", src[start:i])
	}
	c.dst = appendES6Number(c.dst, f)
	return nil
}

// appendES6Number appends f as ECMAScript's Number.prototype.toString does
// (RFC 8785 §3.2.2.3); f is finite. This is encoding/json's float64 encoder
// with -0 written as 0.
func appendES6Number(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// topLevelValue returns the byte range obj[start:end] of the value of the
// top-level member key of the canonical JSON object obj (as Canonicalize
// writes it: no whitespace), exactly as written. Nested members and string
// contents never match. key must not need escaping in JSON. ok is false if
// obj has no such member or is not a canonical object.
func topLevelValue(obj []byte, key string) (start, end int, ok bool) {
	if len(obj) < 2 || obj[0] != '{' {
		return 0, 0, false
	}
	return topLevelValueAt(obj, 1, key)
}

// topLevelValueAt is topLevelValue resuming the member walk at obj[i], the
// opening quote of a top-level member name (just after a ',' that followed
// an earlier member's value): a later key is found without rescanning.
func topLevelValueAt(obj []byte, i int, key string) (start, end int, ok bool) {
	for i < len(obj) && obj[i] == '"' {
		nameEnd := skipString(obj, i) // past the closing '"'
		if nameEnd < 0 || nameEnd >= len(obj) || obj[nameEnd] != ':' {
			return 0, 0, false
		}
		match := string(obj[i+1:nameEnd-1]) == key
		start = nameEnd + 1
		end = skipValue(obj, start)
		if end < 0 {
			return 0, 0, false
		}
		if match {
			return start, end, true
		}
		if end >= len(obj) || obj[end] != ',' {
			return 0, 0, false
		}
		i = end + 1
	}
	return 0, 0, false
}

// skipString returns the index after the canonical string starting at
// obj[i] ('"'), or -1 if it is unterminated. It looks for '"' and '\\'
// 8 bytes at a time.
func skipString(obj []byte, i int) int {
	i++ // past '"'
	for {
		for ; i+8 <= len(obj); i += 8 {
			x := binary.LittleEndian.Uint64(obj[i:])
			q := x ^ (swarOnes * '"')
			bs := x ^ (swarOnes * '\\')
			if m := ((q-swarOnes)&^q | (bs-swarOnes)&^bs) & swarHigh; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
		}
		for i < len(obj) && obj[i] != '"' && obj[i] != '\\' {
			i++
		}
		if i >= len(obj) {
			return -1
		}
		if obj[i] == '"' {
			return i + 1
		}
		i += 2 // past the escape's first two bytes; no escape has more quotes
	}
}

// skipValue returns the index after the canonical value starting at
// obj[i], or -1 if it is malformed.
func skipValue(obj []byte, i int) int {
	if i >= len(obj) {
		return -1
	}
	switch obj[i] {
	case '"':
		return skipString(obj, i)
	case '{', '[':
		depth := 0
		for i < len(obj) {
			switch obj[i] {
			case '"':
				if i = skipString(obj, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default: // number or literal
		j := i
		for j < len(obj) && obj[j] != ',' && obj[j] != '}' && obj[j] != ']' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}
