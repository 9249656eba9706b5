package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

type canonicalCase struct {
	name string
	in   string
	want string
}

func runCanonicalCases(t *testing.T, cases []canonicalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize(nil, []byte(tc.in))
			if err != nil {
				t.Fatalf("Canonicalize(%q): got error %v, want %q", tc.in, err, tc.want)
			}
			if string(got) != tc.want {
				t.Errorf("Canonicalize(%q): got %q, want %q", tc.in, got, tc.want)
			}
			// Put objects in order at the end rather than in place.
			got, err = canonicalize(nil, []byte(tc.in), 0)
			if err != nil || string(got) != tc.want {
				t.Errorf("canonicalize(%q, budget 0): got %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCanonicalizeNumbers(t *testing.T) {
	runCanonicalCases(t, []canonicalCase{
		{"zero", `0`, `0`},
		{"zero fraction", `0.0`, `0`},
		{"minus zero", `-0`, `0`},
		{"minus zero fraction", `-0.0`, `0`},
		{"minus zero exponent", `-0e10`, `0`},
		{"one", `1`, `1`},
		{"minus one", `-1`, `-1`},
		{"trailing zero", `4.50`, `4.5`},
		{"integral fraction", `1.000`, `1`},
		{"integer with zeros", `100`, `100`},
		{"exponent to plain", `2e-3`, `0.002`},
		{"capital exponent", `1E30`, `1e+30`},
		{"plus exponent", `1e+2`, `100`},
		{"2^53", `9007199254740992`, `9007199254740992`},
		{"2^53+1 rounds to even", `9007199254740993`, `9007199254740992`},
		{"minus 2^53", `-9007199254740992`, `-9007199254740992`},
		{"1e21 takes exponent", `1e21`, `1e+21`},
		{"1e21 written out", `1000000000000000000000`, `1e+21`},
		{"below 1e21", `123456789012345680000`, `123456789012345680000`},
		{"below 1e21 with exponent", `1.2345678901234568e20`, `123456789012345680000`},
		{"2^68", `295147905179352825856`, `295147905179352830000`},
		{"1e23", `1e23`, `1e+23`},
		{"1e-6 plain", `0.000001`, `0.000001`},
		{"1e-6 exponent", `1e-6`, `0.000001`},
		{"1e-7", `1e-7`, `1e-7`},
		{"1e-7 plain", `0.0000001`, `1e-7`},
		{"1.234e-6", `0.000001234`, `0.000001234`},
		{"1e-27", `0.000000000000000000000000001`, `1e-27`},
		{"negative small", `-1.5e-12`, `-1.5e-12`},
		{"shortest digits", `333333333.33333329`, `333333333.3333333`},
		{"16 digits", `0.9227544910179643`, `0.9227544910179643`},
		{"17 digits", `0.30000000000000004`, `0.30000000000000004`},
		{"more than 17 digits", `0.1000000000000000055511151231257827`, `0.1`},
		{"15 digits", `123456789.012345`, `123456789.012345`},
		{"15 digits trailing zeros", `123456789.0123450000`, `123456789.012345`},
		{"min subnormal", `5e-324`, `5e-324`},
		{"near min subnormal", `4.9406564584124654e-324`, `5e-324`},
		{"underflow to zero", `1e-400`, `0`},
		{"max double", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"minus max double", `-1.7976931348623157e308`, `-1.7976931348623157e+308`},
		{"exponent with three digits", `1e-100`, `1e-100`},
		{"exponent leading zeros", `1e007`, `10000000`},
		{"round to even", `1424953923781206.25`, `1424953923781206.2`},
	})
}

// TestCanonicalizeAppendixB checks the number serialization samples of
// RFC 8785 Appendix B (except NaN and Infinity, which JSON cannot carry):
// the double given by its IEEE-754 bits, written with 17 significant
// digits, must canonicalize to the sample's JSON.
func TestCanonicalizeAppendixB(t *testing.T) {
	cases := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tc := range cases {
		f := math.Float64frombits(tc.bits)
		// 17 significant digits identify every double; 'e' keeps the
		// input far from the canonical form.
		in := strconv.FormatFloat(f, 'e', 16, 64)
		t.Run(strconv.FormatUint(tc.bits, 16), func(t *testing.T) {
			got, err := Canonicalize(nil, []byte(in))
			if err != nil {
				t.Fatalf("Canonicalize(%s): got error %v, want %s", in, err, tc.want)
			}
			if string(got) != tc.want {
				t.Errorf("Canonicalize(%s): got %s, want %s", in, got, tc.want)
			}
			again, err := Canonicalize(nil, []byte(tc.want))
			if err != nil || string(again) != tc.want {
				t.Errorf("Canonicalize(%s): got %s, %v, want it unchanged", tc.want, again, err)
			}
		})
	}
}

func TestCanonicalizeRFCExamples(t *testing.T) {
	runCanonicalCases(t, []canonicalCase{
		{
			// RFC 8785 §3.2.2.
			name: "section 3.2.2",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			// RFC 8785 §3.2.3: names sorted as UTF-16 code units.
			name: "section 3.2.3",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: `{"\r":"Carriage Return","1":"One","` + "\u0080" + `":"Control","` +
				"\u00f6" + `":"Latin Small Letter O With Diaeresis","` + "\u20ac" +
				`":"Euro Sign","` + "\U0001F600" + `":"Emoji: Grinning Face","` + "\ufb33" +
				`":"Hebrew Letter Dalet With Dagesh"}`,
		},
	})
}

func TestCanonicalizeStrings(t *testing.T) {
	runCanonicalCases(t, []canonicalCase{
		{"plain", `"abc"`, `"abc"`},
		{"empty", `""`, `""`},
		{"short escapes", `"\b\t\n\f\r\"\\"`, `"\b\t\n\f\r\"\\"`},
		{"short escapes as \\u", `"\u0008\u0009\u000A\u000c\u000D\u0022\u005C"`, `"\b\t\n\f\r\"\\"`},
		{"solidus", `"\/a/"`, `"/a/"`},
		{"control characters", `"\u0000\u0001\u001F\u000b"`, `"\u0000\u0001\u001f\u000b"`},
		{"delete stays literal", `"\u007f"`, "\"\x7f\""},
		{"html characters stay literal", `"\u003cb\u003e \u0026 <i>"`, `"<b> & <i>"`},
		{"line separators stay literal", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"non-ASCII escape", `"caf\u00e9"`, `"café"`},
		{"non-ASCII literal", `"café €"`, `"café €"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`},
		{"surrogate pair upper hex", `"\uD83D\uDE00"`, `"😀"`},
		{"supplementary literal", `"😀"`, `"😀"`},
		{"BMP private use", `"\ue000\uffff"`, "\"\ue000\uffff\""},
	})
}

func TestCanonicalizeStructure(t *testing.T) {
	runCanonicalCases(t, []canonicalCase{
		{"literals", " [ true , false , null ] ", `[true,false,null]`},
		{"empty object", "{ }", `{}`},
		{"empty array", "[\n]", `[]`},
		{"whitespace", "\t{ \"b\" :\r\n1 , \"a\" : [ 1 , { } ] }\n", `{"a":[1,{}],"b":1}`},
		{"space runs", "{" + strings.Repeat(" ", 8) + `"a"` + strings.Repeat(" ", 16) + ":" +
			strings.Repeat(" ", 9) + "1" + strings.Repeat(" ", 7) + "}" + strings.Repeat(" ", 24), `{"a":1}`},
		{"nested sort", `{"b":{"z":1,"y":2},"a":[{"d":1,"c":2}]}`, `{"a":[{"c":2,"d":1}],"b":{"y":2,"z":1}}`},
		{"prefix before longer", `{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
		{"array order kept", `[3,1,2]`, `[3,1,2]`},
		{
			"supplementary before U+E000",
			"{\"\ue000\":1,\"\U00010000\":2,\"\uffff\":3,\"\ud7ff\":4}",
			"{\"\ud7ff\":4,\"\U00010000\":2,\"\ue000\":1,\"\uffff\":3}",
		},
		{"escaped names sort by decoded text", `{"\u0062":1,"a\"":2,"a":3}`, `{"a":3,"a\"":2,"b":1}`},
		{"control name", `{"\n":1,"\u0001":2}`, `{"\u0001":2,"\n":1}`},
		{"many members", `{"j":0,"i":1,"h":2,"g":3,"f":4,"e":5,"d":6,"c":7,"b":8,"a":9}`,
			`{"a":9,"b":8,"c":7,"d":6,"e":5,"f":4,"g":3,"h":2,"i":1,"j":0}`},
		{"nested out of order", `{"b":[{"d":1,"c":{"f":1,"e":2}},{"y":1,"x":[{"s":1,"r":2}]}],"a":{"z":{"q":1,"p":2},"m":0}}`,
			`{"a":{"m":0,"z":{"p":2,"q":1}},"b":[{"c":{"e":2,"f":1},"d":1},{"x":[{"r":2,"s":1}],"y":1}]}`},
		{"out of order inside in order", `{"a":{"c":{"e":1,"d":2}},"b":{"f":[{"h":1,"g":2}]}}`,
			`{"a":{"c":{"d":2,"e":1}},"b":{"f":[{"g":2,"h":1}]}}`},
		{"same name in different objects", `{"a":{"a":{"a":1}},"b":{"a":2}}`, `{"a":{"a":{"a":1}},"b":{"a":2}}`},
	})
}

func TestCanonicalizeAppends(t *testing.T) {
	dst := []byte("prefix:")
	got, err := Canonicalize(dst, []byte(`{"b":1,"a":2}`))
	if err != nil {
		t.Fatalf("Canonicalize: got error %v, want nil", err)
	}
	if want := `prefix:{"a":2,"b":1}`; string(got) != want {
		t.Errorf("Canonicalize: got %q, want %q", got, want)
	}
	got, err = Canonicalize(dst, []byte(`{"a":1,"a":2}`))
	if err == nil {
		t.Fatalf("Canonicalize(duplicate): got nil error, want an error")
	}
	if string(got) != "prefix:" {
		t.Errorf("Canonicalize(duplicate): got dst %q, want %q", got, "prefix:")
	}
}

func TestCanonicalizeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   string
	}{
		{"empty", ``},
		{"whitespace only", "  \n"},
		{"trailing data", `{} {}`},
		{"trailing comma in array", `[1,]`},
		{"trailing comma in object", `{"a":1,}`},
		{"missing colon", `{"a" 1}`},
		{"missing value", `{"a":}`},
		{"unquoted name", `{a:1}`},
		{"single quotes", `'a'`},
		{"unterminated array", `[1`},
		{"unterminated object", `{"a":1`},
		{"unterminated string", `"abc`},
		{"unterminated escape", `"abc\`},
		{"bad literal", `tru`},
		{"capital literal", `True`},
		{"NaN", `NaN`},
		{"Infinity", `Infinity`},
		{"leading zero", `01`},
		{"leading plus", `+1`},
		{"bare minus", `-`},
		{"dot without digits", `1.`},
		{"leading dot", `.5`},
		{"exponent without digits", `1e`},
		{"exponent sign only", `1e+`},
		{"hex number", `0x10`},
		{"duplicate names", `{"a":1,"b":2,"a":3}`},
		{"duplicate names sorted", `{"a":1,"a":2}`},
		{"duplicate names via escape", `{"a":1,"\u0061":2}`},
		{"duplicate nested", `{"x":{"k":1,"k":1}}`},
		{"invalid UTF-8", "\"\xff\""},
		{"truncated UTF-8", "\"\xe2\x82\""},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\""},
		{"overlong UTF-8", "\"\xc0\xaf\""},
		{"lone high surrogate", `"\ud83d"`},
		{"lone high surrogate before text", `"\ud83dx"`},
		{"high surrogate pair with non-low", `"\ud83d\u0041"`},
		{"lone low surrogate", `"\ude00"`},
		{"reversed surrogates", `"\ude00\ud83d"`},
		{"control character in string", "\"a\tb\""},
		{"bad escape", `"\x41"`},
		{"short \\u escape", `"\u12"`},
		{"bad hex", `"\u12g4"`},
		{"overflow", `1e400`},
		{"negative overflow", `-1e400`},
		{"overflow in array", `[1.8e308]`},
		{"byte order mark", "\xef\xbb\xbf{}"},
		{"too deep arrays", strings.Repeat("[", jcsMaxDepth+1) + strings.Repeat("]", jcsMaxDepth+1)},
		{"too deep objects", strings.Repeat(`{"a":`, jcsMaxDepth+1) + "1" + strings.Repeat("}", jcsMaxDepth+1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize(nil, []byte(tc.in))
			if err == nil {
				t.Errorf("Canonicalize(%.40q): got %.40q, want an error", tc.in, got)
			}
		})
	}
}

// TestCanonicalizeDeepUnsorted checks that objects out of order nested
// deep are put in order in linear time: moving the leaf once per level
// would copy 10 GB here.
func TestCanonicalizeDeepUnsorted(t *testing.T) {
	const depth = jcsMaxDepth - 1
	leaf := `"` + strings.Repeat("x", 1<<20) + `"`
	in := strings.Repeat(`{"b":`, depth) + leaf + strings.Repeat(`,"a":1}`, depth)
	want := strings.Repeat(`{"a":1,"b":`, depth) + leaf + strings.Repeat(`}`, depth)
	got, err := Canonicalize(nil, []byte(in))
	if err != nil {
		t.Fatalf("Canonicalize: got error %v, want nil", err)
	}
	if string(got) != want {
		t.Errorf("Canonicalize: got %.80s..., want %.80s...", got, want)
	}
}

func TestCanonicalizeDepthLimit(t *testing.T) {
	in := strings.Repeat("[", jcsMaxDepth) + strings.Repeat("]", jcsMaxDepth)
	got, err := Canonicalize(nil, []byte(in))
	if err != nil {
		t.Fatalf("Canonicalize(depth %d): got error %v, want nil", jcsMaxDepth, err)
	}
	if string(got) != in {
		t.Errorf("Canonicalize(depth %d): got %d bytes, want the input", jcsMaxDepth, len(got))
	}
}

func TestJCSCompareUTF16(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		want int
	}{
		{"equal", "abc", "abc", 0},
		{"ASCII", "a", "b", -1},
		{"prefix", "ab", "abc", -1},
		{"two-byte vs ASCII", "\u00e9", "z", 1},
		{"three-byte order", "\u20ac", "\ufb33", -1},
		{"supplementary before U+E000", "\U0001F600", "\ue000", -1},
		{"supplementary before U+FFFF", "\U00010000", "\uffff", -1},
		{"supplementary after U+D7FF", "\U00010000", "\ud7ff", 1},
		{"supplementary order", "\U0001F600", "\U0001F601", -1},
		{"shared lead byte", "x\u00e9", "x\u00ea", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := compareUTF16([]byte(tc.a), []byte(tc.b)); got != tc.want {
				t.Errorf("compareUTF16(%q, %q): got %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := compareUTF16([]byte(tc.b), []byte(tc.a)); got != -tc.want {
				t.Errorf("compareUTF16(%q, %q): got %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

// jcsFixture is an input file in testdata/jcs.
type jcsFixture struct {
	name string // without ".json"
	src  []byte
}

// jcsFixtures returns the fixtures in testdata/jcs in name order.
func jcsFixtures(tb testing.TB) []jcsFixture {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "jcs", "*.json"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("glob testdata/jcs: got %d files, %v; want fixtures", len(paths), err)
	}
	var fixtures []jcsFixture
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		fixtures = append(fixtures, jcsFixture{strings.TrimSuffix(filepath.Base(p), ".json"), b})
	}
	return fixtures
}

func TestCanonicalizeFixtures(t *testing.T) {
	for _, fx := range jcsFixtures(t) {
		src := fx.src
		t.Run(fx.name, func(t *testing.T) {
			got, err := Canonicalize(nil, src)
			if err != nil {
				t.Fatalf("Canonicalize: got error %v, want nil", err)
			}
			want, err := refCanonicalize(src)
			if err != nil {
				t.Fatalf("refCanonicalize: got error %v, want nil", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Canonicalize: got\n%s\nwant (reference)\n%s", got, want)
			}
			again, err := Canonicalize(nil, got)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("Canonicalize(canonical): got %s, %v; want it unchanged", again, err)
			}
			for _, budget := range []int{0, 100, 1000, 4000} {
				if b, err := canonicalize(nil, src, budget); err != nil || !bytes.Equal(b, want) {
					t.Errorf("canonicalize(budget %d): got\n%s, %v\nwant\n%s", budget, b, err, want)
				}
			}
			if bytes.Contains(got, []byte(`\u003c`)) || !bytes.Contains(got, []byte("<")) {
				t.Errorf("Canonicalize: got \\u003c escapes kept, want a literal '<'")
			}
			// Re-indenting changes nothing canonical.
			var indented bytes.Buffer
			if err := json.Indent(&indented, got, "", "    "); err != nil {
				t.Fatal(err)
			}
			fromIndented, err := Canonicalize(nil, indented.Bytes())
			if err != nil || !bytes.Equal(fromIndented, got) {
				t.Errorf("Canonicalize(re-indented): got %s, %v; want %s", fromIndented, err, got)
			}
		})
	}
}

func TestTopLevelValue(t *testing.T) {
	obj := `{"a":"first","arr":[1,{"sequence":9}],"b":{"sequence":7,"x":"}"},` +
		`"n":-1.5,"nul":null,"s":"\"sequence\":8,{[","sequence":42,"t":true,"z":{"k":[]}}`
	cases := []struct {
		name   string
		obj    string
		key    string
		want   string
		wantOK bool
	}{
		{"first member", obj, "a", `"first"`, true},
		{"last member", obj, "z", `{"k":[]}`, true},
		{"array value", obj, "arr", `[1,{"sequence":9}]`, true},
		{"object value", obj, "b", `{"sequence":7,"x":"}"}`, true},
		{"number value", obj, "n", `-1.5`, true},
		{"null value", obj, "nul", `null`, true},
		{"true value", obj, "t", `true`, true},
		{"string value with quotes and braces", obj, "s", `"\"sequence\":8,{["`, true},
		{"skips nested and string matches", obj, "sequence", `42`, true},
		{"absent", obj, "missing", "", false},
		{"absent but nested", `{"a":{"sequence":1},"b":"\"sequence\":2"}`, "sequence", "", false},
		{"prefix of a name", obj, "seq", "", false},
		{"name is a prefix", obj, "sequences", "", false},
		{"only member", `{"sequence":1}`, "sequence", `1`, true},
		{"empty object", `{}`, "a", "", false},
		{"escaped backslash before quote", `{"a":"x\\","sequence":3}`, "sequence", `3`, true},
		{"not an object", `[1]`, "a", "", false},
		{"empty input", ``, "a", "", false},
		{"truncated", `{"a":[1,2`, "b", "", false},
		{"truncated string", `{"a":"x`, "b", "", false},
		{"truncated name", `{"a`, "a", "", false},
		{"escaped quote ends a string value", `{"a":"x\\\"","sequence":3}`, "a", `"x\\\""`, true},
		{"only backslashes in a name", `{"\\\\":1,"sequence":3}`, "sequence", `3`, true},
		{"value without its name", `{1}`, "a", "", false},
		{"member without a colon", `{"a"1}`, "a", "", false},
		{"trailing comma", `{"a":1,}`, "b", "", false},
	}
	walks := []struct {
		name string
		find func(obj []byte, key string) (start, end int, ok bool)
	}{
		{"forward", topLevelValue},
		{"backward", func(obj []byte, key string) (int, int, bool) {
			start, end, name, ok := topLevelValueFromEnd(obj, key)
			if ok && string(obj[name:start]) != `"`+key+`":` {
				t.Errorf("topLevelValueFromEnd(%q): name at %d reads %q", key, name, obj[name:start])
			}
			return start, end, ok
		}},
	}
	for _, tc := range cases {
		for _, w := range walks {
			t.Run(tc.name+"/"+w.name, func(t *testing.T) {
				start, end, ok := w.find([]byte(tc.obj), tc.key)
				if ok != tc.wantOK {
					t.Fatalf("%s walk for %q: got ok %v, want %v", w.name, tc.key, ok, tc.wantOK)
				}
				if !ok {
					return
				}
				if got := tc.obj[start:end]; got != tc.want {
					t.Errorf("%s walk for %q: got %s, want %s", w.name, tc.key, got, tc.want)
				}
			})
		}
	}
}

func TestTopLevelValueAllocs(t *testing.T) {
	obj := []byte(`{"a":{"sequence":1},"sequence":2,"z":"x"}`)
	allocs := testing.AllocsPerRun(100, func() {
		topLevelValue(obj, "sequence")
		topLevelValueFromEnd(obj, "sequence")
	})
	if allocs != 0 {
		t.Errorf("topLevelValue, topLevelValueFromEnd: got %v allocs, want 0", allocs)
	}
}

// BenchmarkCanonicalize canonicalizes each fixture as indented in
// testdata, compact with members in struct order (as json.Marshal writes
// an entry: the append path) and already canonical (the verify path).
func BenchmarkCanonicalize(b *testing.B) {
	for _, fx := range jcsFixtures(b) {
		name, indented := fx.name, fx.src
		var compact bytes.Buffer
		if err := json.Compact(&compact, indented); err != nil {
			b.Fatal(err)
		}
		canonical, err := Canonicalize(nil, indented)
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range []struct {
			form string
			src  []byte
		}{
			{"indented", indented},
			{"compact", compact.Bytes()},
			{"canonical", canonical},
		} {
			b.Run(name+"/"+in.form, func(b *testing.B) {
				dst := make([]byte, 0, 2*len(in.src))
				b.ReportAllocs()
				b.SetBytes(int64(len(in.src)))
				for b.Loop() {
					var err error
					if dst, err = Canonicalize(dst[:0], in.src); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkTopLevelValue(b *testing.B) {
	src := jcsFixtures(b)[0].src // allow_read
	canonical, err := Canonicalize(nil, src)
	if err != nil {
		b.Fatal(err)
	}
	// A ledger entry has "sequence" at the top level, sorted after most
	// of the large members; the governor fixture has none.
	withSequence, err := Canonicalize(nil, append([]byte(`{"sequence":12345,`), bytes.TrimSpace(src)[1:]...))
	if err != nil {
		b.Fatal(err)
	}
	fromEnd := func(obj []byte, key string) (int, int, bool) {
		start, end, _, ok := topLevelValueFromEnd(obj, key)
		return start, end, ok
	}
	for _, bc := range []struct {
		name   string
		find   func(obj []byte, key string) (start, end int, ok bool)
		obj    []byte
		wantOK bool
	}{
		{"absent", topLevelValue, canonical, false},
		{"present", topLevelValue, withSequence, true},
		{"absent/from-end", fromEnd, canonical, false},
		{"present/from-end", fromEnd, withSequence, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.obj)))
			for b.Loop() {
				if _, _, ok := bc.find(bc.obj, "sequence"); ok != bc.wantOK {
					b.Fatalf("got ok %v, want %v", ok, bc.wantOK)
				}
			}
		})
	}
}
