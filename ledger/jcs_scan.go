package ledger

import (
	"encoding/binary"
	"math/bits"
)

// Finding top-level members of canonical JSON without decoding it.

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
