package ledger

// RFC 8785 JSON Canonicalization Scheme (JCS): the byte form an entry is
// hashed in. Canonicalize is a single-pass byte scanner that appends the
// canonical form straight to dst; it never decodes into interface values.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
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
