package ledger

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// RFC 8785 strings: member-name order by UTF-16 code units, unescaping
// and minimal re-escaping.

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
