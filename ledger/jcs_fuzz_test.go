package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// refCanonicalize is a slow, independent RFC 8785 implementation for
// checking Canonicalize: encoding/json decodes (with UseNumber, member by
// member so that duplicates show), and a recursive encoder writes the
// canonical form, formatting numbers by the ECMAScript algorithm itself.
// It rejects what encoding/json accepts but RFC 8785 does not.
func refCanonicalize(src []byte) ([]byte, error) {
	if !json.Valid(src) {
		return nil, errors.New("invalid JSON")
	}
	if !utf8.Valid(src) {
		return nil, errors.New("invalid UTF-8") // encoding/json replaces it
	}
	if refLoneSurrogate(src) {
		return nil, errors.New("lone surrogate") // encoding/json replaces it
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	v, err := refDecode(dec)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := refEncode(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type refMember struct {
	name  string
	value any
}

// refObject keeps an object's members in input order.
type refObject []refMember

func refDecode(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := refObject{}
		seen := map[string]bool{}
		for dec.More() {
			nameTok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			name := nameTok.(string)
			if seen[name] {
				return nil, fmt.Errorf("duplicate name %q", name)
			}
			seen[name] = true
			v, err := refDecode(dec)
			if err != nil {
				return nil, err
			}
			obj = append(obj, refMember{name, v})
		}
		_, err := dec.Token() // '}'
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := refDecode(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token() // ']'
		return arr, err
	}
	return tok, nil
}

func refEncode(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case string:
		refString(buf, v)
	case json.Number:
		s, err := refNumber(string(v))
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := refEncode(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case refObject:
		sorted := slices.Clone(v)
		slices.SortFunc(sorted, func(a, b refMember) int {
			return slices.Compare(utf16.Encode([]rune(a.name)), utf16.Encode([]rune(b.name)))
		})
		buf.WriteByte('{')
		for i, m := range sorted {
			if i > 0 {
				buf.WriteByte(',')
			}
			refString(buf, m.name)
			buf.WriteByte(':')
			if err := refEncode(buf, m.value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

// refString writes s as RFC 8785 §3.2.2.2 says.
func refString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\b':
			buf.WriteString(`\b`)
		case '\t':
			buf.WriteString(`\t`)
		case '\n':
			buf.WriteString(`\n`)
		case '\f':
			buf.WriteString(`\f`)
		case '\r':
			buf.WriteString(`\r`)
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		default:
			if r < 0x20 {
				fmt.Fprintf(buf, `\u%04x`, r)
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
}

// refNumber formats a JSON number by ECMAScript's Number::toString
// (ECMA-262 §6.1.6.1.20) applied to its nearest double: with k the number
// of shortest round-trip digits s and n the decimal point position.
func refNumber(lit string) (string, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if math.IsInf(f, 0) {
		return "", fmt.Errorf("number %s overflows: %v", lit, err)
	}
	if f == 0 {
		return "0", nil
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, err := strconv.Atoi(exp)
	if err != nil {
		return "", err
	}
	k, n := len(digits), e+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k), nil
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:], nil
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits, nil
	}
	expSign := "+"
	if n-1 < 0 {
		expSign = "-"
	}
	abs := strconv.Itoa(max(n-1, 1-n))
	if k == 1 {
		return sign + digits + "e" + expSign + abs, nil
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + expSign + abs, nil
}

// refLoneSurrogate reports whether the valid JSON src has a \u escape of
// a surrogate that is not part of a high-low pair.
func refLoneSurrogate(src []byte) bool {
	hex := func(i int) rune {
		r, err := strconv.ParseUint(string(src[i:i+4]), 16, 32)
		if err != nil {
			return -1
		}
		return rune(r)
	}
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' {
			continue
		}
		if src[i+1] != 'u' {
			i++
			continue
		}
		r := hex(i + 2)
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+12 > len(src) || src[i+6] != '\\' || src[i+7] != 'u' {
				return true
			}
			if lo := hex(i + 8); lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}

func TestCanonicalizeReference(t *testing.T) {
	// The reference must agree with the RFC's own examples too.
	cases := []struct{ in, want string }{
		{`[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]`, `[333333333.3333333,1e+30,4.5,0.002,1e-27]`},
		{`[1e21,123456789012345680000,0.000001,1e-7,-0.0,5e-324]`, `[1e+21,123456789012345680000,0.000001,1e-7,0,5e-324]`},
		{"{\"\ue000\":1,\"\U00010000\":2}", "{\"\U00010000\":2,\"\ue000\":1}"},
	}
	for _, tc := range cases {
		got, err := refCanonicalize([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("refCanonicalize(%s): got %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func FuzzCanonicalize(f *testing.F) {
	// Small seeds: the fuzzer spends its time minimizing large inputs.
	// The fixtures are checked against the reference in
	// TestCanonicalizeFixtures.
	for _, s := range []string{
		`{"agent_id": "support-bot", "sequence": 3, "action": {"type": "read", "parameters": null},
  "verdict": {"decision": "ALLOW", "ucs": 0.9227544910179643, "tier": 2, "vetoes": []},
  "pipeline": [{"step": "tier2", "input_state": {"ucs": 0.92, "allow_threshold": 0.7},
    "decided_verdict": true, "duration_us": 12}],
  "authority": ["amount \u003c= 500"], "adjustment": -0, "prev_hash": "00"}`,
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],` +
			`"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
		`{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}`,
		`[0,-0,0.0,1e21,1e-7,0.000001,9007199254740993,5e-324,1.7976931348623157e308]`,
		`{"a":1,"a":2}`, `"\ud83d"`, "\"\xff\"", `1e400`, `[1,]`, `{"a":{"b":[{"c":"d"}]}}`,
		`"\u0000\u001f\u007f\u2028<>&"`, `{"b":"x","a":"\"a\":{"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := Canonicalize(nil, src)
		want, refErr := refCanonicalize(src)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("Canonicalize(%.300q): got error %v, want error %v (reference)", src, err, refErr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Canonicalize(%.300q): got %q, want %q (reference)", src, got, want)
		}
		if !json.Valid(got) {
			t.Fatalf("Canonicalize(%.300q): got invalid JSON %q", src, got)
		}
		deferred, err := canonicalize(nil, src, 0)
		if err != nil || !bytes.Equal(deferred, got) {
			t.Fatalf("canonicalize(%.300q, budget 0): got %q, %v; want %q", src, deferred, err, got)
		}
		again, err := Canonicalize([]byte("x"), got)
		if err != nil || !bytes.Equal(again[1:], got) || again[0] != 'x' {
			t.Fatalf("Canonicalize(%.300q): got %q, %v; want it unchanged after the prefix", got, again, err)
		}
		checkTopLevelValue(t, got)
	})
}

// checkTopLevelValue checks that topLevelValue finds every top-level
// member of the canonical object obj whose name needs no escaping.
func checkTopLevelValue(t *testing.T, obj []byte) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	v, err := refDecode(dec)
	if err != nil {
		t.Fatalf("refDecode(%q): %v", obj, err)
	}
	members, isObject := v.(refObject)
	if !isObject {
		if _, _, ok := topLevelValue(obj, "a"); ok {
			t.Fatalf("topLevelValue(%q, a): got ok, want not ok for a non-object", obj)
		}
		return
	}
	for _, m := range members {
		var name bytes.Buffer
		refString(&name, m.name)
		if name.Len() != len(m.name)+2 {
			continue // the name needs escaping
		}
		var want bytes.Buffer
		if err := refEncode(&want, m.value); err != nil {
			t.Fatal(err)
		}
		start, end, ok := topLevelValue(obj, m.name)
		if !ok || !bytes.Equal(obj[start:end], want.Bytes()) {
			t.Fatalf("topLevelValue(%q, %q): got %q, %v; want %q", obj, m.name, obj[start:end], ok, want.Bytes())
		}
		start, end, _, ok = topLevelValueFromEnd(obj, m.name)
		if !ok || !bytes.Equal(obj[start:end], want.Bytes()) {
			t.Fatalf("topLevelValueFromEnd(%q, %q): got %q, %v; want %q", obj, m.name, obj[start:end], ok, want.Bytes())
		}
	}
	if _, _, _, ok := topLevelValueFromEnd(obj, "\x00absent"); ok {
		t.Fatalf("topLevelValueFromEnd(%q): found a member that is not there", obj)
	}
}

// FuzzTopLevelValueFromEnd feeds the backward member walk, which reads
// stored bodies that need not be canonical JSON, arbitrary bytes: it must
// not panic, and a value it finds must lie within obj after its name.
func FuzzTopLevelValueFromEnd(f *testing.F) {
	for _, s := range []string{`{"a":1,"sequence":2}`, `{"a":"x\\","sequence":3}`, `{"s":"\"","sequence":[{"b":"]"}]}`,
		`{"sequence":1}`, `{}`, `{1}`, `{"a"1}`, `{"a":1,}`, `"}`, `{"\":1}`, `{:1}`} {
		f.Add([]byte(s), "sequence")
	}
	f.Fuzz(func(t *testing.T, obj []byte, key string) {
		start, end, name, ok := topLevelValueFromEnd(obj, key)
		if !ok {
			return
		}
		if name < 1 || name+len(key)+3 != start || start >= end || end >= len(obj) {
			t.Fatalf("topLevelValueFromEnd(%q, %q): got name %d, value [%d:%d]", obj, key, name, start, end)
		}
		if string(obj[name:start]) != `"`+key+`":` {
			t.Fatalf("topLevelValueFromEnd(%q, %q): the name reads %q", obj, key, obj[name:start])
		}
	})
}
