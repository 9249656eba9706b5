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
	for i := 1; i < len(obj) && obj[i] == '"'; {
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

// topLevelValueFromEnd is topLevelValue walking the members from the last
// one backward: cheaper for a key that sorts late, as "sequence" does in a
// ledger entry. For a canonical object both walks give the same answer.
// name is the index of the member's name (its opening quote): a walk for an
// earlier key can resume at name-1 with topLevelValueBefore.
func topLevelValueFromEnd(obj []byte, key string) (start, end, name int, ok bool) {
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return 0, 0, 0, false
	}
	return topLevelValueBefore(obj, len(obj)-1, key)
}

// topLevelValueBefore is topLevelValueFromEnd resuming the backward walk at
// obj[i], the ',' or '}' just after a top-level member's value.
func topLevelValueBefore(obj []byte, i int, key string) (start, end, name int, ok bool) {
	for i > 0 && (obj[i] == ',' || obj[i] == '}') {
		end = i
		if start = skipValueBack(obj, end); start < 4 || obj[start-1] != ':' || obj[start-2] != '"' {
			return 0, 0, 0, false
		}
		if name = skipStringBack(obj, start-2); name < 1 {
			return 0, 0, 0, false
		}
		if string(obj[name+1:start-2]) == key {
			return start, end, name, true
		}
		i = name - 1
	}
	return 0, 0, 0, false
}

// skipStringBack returns the index of the opening quote of the canonical
// string whose closing quote is obj[q], or -1 if there is none. A quote is
// the opening one when an even number of backslashes precede it.
func skipStringBack(obj []byte, q int) int {
	for i := q - 1; i >= 0; i-- {
		if obj[i] != '"' {
			continue
		}
		k := i
		for k > 0 && obj[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i
		}
	}
	return -1
}

// skipValueBack returns the index of the first byte of the canonical
// value of a top-level member that ends just before obj[end], or -1 if it
// is malformed.
func skipValueBack(obj []byte, end int) int {
	i := end - 1
	if i < 1 {
		return -1
	}
	switch obj[i] {
	case '"':
		return skipStringBack(obj, i)
	case '}', ']':
		depth := 0
		for ; i >= 0; i-- {
			switch obj[i] {
			case '"':
				if i = skipStringBack(obj, i); i < 0 {
					return -1
				}
			case '}', ']':
				depth++
			case '{', '[':
				if depth--; depth == 0 {
					return i
				}
			}
		}
		return -1
	case ',', ':', '{', '[':
		return -1
	default: // number or literal
		for i > 0 && obj[i-1] != ':' && obj[i-1] != ',' && obj[i-1] != '{' && obj[i-1] != '[' {
			i--
		}
		return i
	}
}
