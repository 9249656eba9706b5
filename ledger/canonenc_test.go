package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
)

// canonOld is the definition the encoder must meet.
func canonOld(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(nil, raw)
}

// canonSame checks that the encoder writes exactly canonOld(v), or fails
// where it fails.
func canonSame(t *testing.T, enc *canonEncoder, name string, v any) {
	t.Helper()
	want, werr := canonOld(v)
	got, gerr := enc.appendValue([]byte("prefix"), v, nil)
	switch {
	case werr != nil && gerr != nil:
	case werr != nil:
		t.Errorf("%s: encoding/json+Canonicalize fails (%v), the encoder writes %q", name, werr, got)
	case gerr != nil:
		t.Errorf("%s: the encoder fails (%v), want %q", name, gerr, want)
	case string(got) != "prefix"+string(want):
		t.Errorf("%s:\n got %q\nwant %q", name, got, "prefix"+string(want))
	}
	if gerr != nil && string(got) != "prefix" {
		t.Errorf("%s: on error the encoder returns %q, not dst", name, got)
	}
}

// Types with the methods encoding/json looks for.
type (
	canonValText   int  // MarshalText on the value
	canonPtrText   int  // MarshalText on the pointer
	canonValJSON   bool // MarshalJSON on the value
	canonPtrJSON   struct{ N int }
	canonBadText   string
	canonRaw       string // MarshalJSON returns the string itself
	canonNamedStr  string
	canonNamedMap  map[canonNamedStr]int
	canonTextBytes byte // a byte type with MarshalText: []canonTextBytes is no base64
)

func (c canonValText) MarshalText() ([]byte, error) {
	return []byte("v<" + strconv.Itoa(int(c)) + ">\xff"), nil
}
func (c *canonPtrText) MarshalText() ([]byte, error) {
	return []byte("p" + strconv.Itoa(int(*c))), nil
}
func (c canonValJSON) MarshalJSON() ([]byte, error) {
	return []byte(` { "z" : 1 , "a" : [ 1.50, "\u003c\u2028" ] } `), nil
}
func (c *canonPtrJSON) MarshalJSON() ([]byte, error) {
	return []byte(`{"ptr":` + strconv.Itoa(c.N) + `}`), nil
}
func (c canonBadText) MarshalText() ([]byte, error) { return nil, errors.New("bad text") }
func (c canonRaw) MarshalJSON() ([]byte, error)     { return []byte(c), nil }
func (c canonTextBytes) MarshalText() ([]byte, error) {
	return []byte{'b', byte(c)}, nil
}

type canonInner struct {
	A float64 `json:"a"`
	B string  `json:"b,omitempty"`
}

type canonAll struct {
	Str      string           `json:"str"`
	OmitF    float64          `json:"omit_f,omitempty"`
	OmitI64  int64            `json:"omit_i64,omitempty"`
	NStr     canonNamedStr    `json:"nstr"`
	Empty    string           `json:"empty,omitempty"`
	Int      int              `json:"int,omitempty"`
	Uint8    uint8            `json:"u8"`
	F32      float32          `json:"f32"`
	Bool     bool             `json:"bool,omitempty"`
	Ptr      *canonInner      `json:"ptr"`
	NilPtr   *canonInner      `json:"nil_ptr"`
	OmitPtr  *canonInner      `json:"omit_ptr,omitempty"`
	Slice    []string         `json:"slice"`
	NilSlice []string         `json:"nil_slice"`
	OmitSl   []int            `json:"omit_slice,omitempty"`
	Map      map[string]int   `json:"map"`
	NilMap   map[string]int   `json:"nil_map"`
	OmitMap  map[string]int   `json:"omit_map,omitempty"`
	Any      any              `json:"any"`
	NilAny   any              `json:"nil_any,omitempty"`
	Arr      [3]byte          `json:"arr"`
	Bytes    []byte           `json:"bytes"`
	Num      json.Number      `json:"num"`
	Raw      json.RawMessage  `json:"raw"`
	NilRaw   json.RawMessage  `json:"nil_raw"`
	Verdict  governor.Verdict `json:"verdict"`
	Rev      governor.Reversibility
	PtrText  canonPtrText   `json:"ptr_text"`
	ValText  canonValText   `json:"val_text"`
	PtrJSON  canonPtrJSON   `json:"ptr_json"`
	Texts    []canonPtrText `json:"texts"`
	TextMap  map[string]canonPtrText
	Skip     string `json:"-"`
	//lint:ignore SA5008 deliberately the field named "-" (encoding/json's "-," rule)
	Dash string `json:"-,"`
	//lint:ignore SA5008 deliberately invalid: encoding/json then uses the field name
	Bad    string             `json:"a\"b"`
	Wide   int                `json:"ｚ"` // U+FF5A: after U+1D400 in UTF-16
	Math   int                `json:"𝐀"` // U+1D400: before U+FF5A in UTF-16
	Nested map[string]any     `json:"nested"`
	Named  canonNamedMap      `json:"named"`
	TBytes []canonTextBytes   `json:"tbytes"`
	Floats map[string]float64 `json:"floats"`
	//lint:ignore U1000 an unexported field, present to show it is skipped
	hidden int
}

type (
	canonEmbedded struct {
		canonInner
		C int `json:"c"`
	}
	canonDupTagged struct {
		A int `json:"B"`
		B int
	}
	canonQuoted struct {
		N int     `json:"n,string"`
		F float64 `json:"f,string"`
	}
	canonOmitZero struct {
		T time.Time `json:"t,omitzero"`
		N int       `json:"n,omitzero"`
	}
	canonFuncField struct {
		F func() `json:"f,omitempty"`
	}
	canonNode struct {
		Next *canonNode `json:"next,omitempty"`
		Any  any        `json:"any,omitempty"`
	}
)

func canonNested(depth int, inner any) any {
	v := inner
	for range depth {
		v = []any{v}
	}
	return v
}

func TestCanonEncoderCases(t *testing.T) {
	negZero := math.Copysign(0, -1)
	ptrText := canonPtrText(7)
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	loop := &canonNode{}
	loop.Next = loop
	ptrChain := &canonNode{Any: "end"}
	for range 1500 {
		ptrChain = &canonNode{Next: ptrChain}
	}
	var anyLoop any
	anyLoop = &anyLoop
	cases := map[string]any{
		"nil": nil,
		"strings": []any{"", "plain", "<>&", "\u2028\u2029", "\x00\x01\x1f\b\t\n\f\r\x7f", `"\`, "é€😀\uFFFD",
			"0123456789abcdef\"0123456789\\abcdef\x00", strings.Repeat("long text ", 20) + "\n"},
		"invalid UTF-8": []string{"\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x80", "ok\xffok\xfe\xfd", "\xc0\xaf", "\xf0\x9f\x98"},
		"utf16 keys":    map[string]any{"\uffff": 1, "\U0001F600": 2, "a": 3, "é": 4, "\ue000": 5, "": 6, "\u007f": 7, "aa": 8, "A": 9},
		"utf16 keys 2":  map[string]string{"\U0001F600x": "a", "\U0001F600": "b", "\uFB01": "c", "\U00010000": "d"},
		"invalid key":   map[string]any{"\xff": 1, "a": 2},
		"dup keys":      map[string]any{"\xff": 1, "\xfe": 2},
		"dup keys 2":    map[string]int{"\xff": 1, "\uFFFD": 2},
		"floats": []float64{1e21, 1e-7, negZero, 5e-324, 0.1 + 0.2, 1e20, 123456789012345.6, 1e15, 1e16, -1e-6, 1e-6,
			9.999999999999999e20, math.MaxFloat64, -math.MaxFloat64, 2.5, 1 << 53, 1<<53 + 2, 999999999999999, 1e14 + 0.5, 0.000001234},
		"float32":    []float32{0.1, 1e-7, 3.4e38, 16777217, 1e21, 1e-45, float32(negZero), 1.5, 123456.79},
		"NaN":        []any{math.NaN()},
		"Inf":        map[string]any{"x": math.Inf(-1)},
		"NaN32":      float32(math.Inf(1)),
		"integers":   []any{int64(1<<53 - 1), int64(1 << 53), int64(1<<53 + 1), int64(-(1<<53 + 1)), int64(math.MaxInt64), int64(math.MinInt64), 999999999999999, 1000000000000000, -999999999999999, -1000000000000000},
		"uints":      []any{uint64(math.MaxUint64), uint64(1<<53 + 1), uint8(255), uintptr(12), uint16(7), uint32(1e9)},
		"small ints": []any{int8(-128), int16(300), int32(-7)},
		"numbers": []json.Number{"", "0", "-0", "1.50", "1E+2", "0.000001", "1e-7", "12345678901234567890", "-0.0", "1.0e21",
			"100000000000000000000", "0.1000000000000000055511151231257827"},
		"number 1e400":   json.Number("1e400"),
		"number invalid": json.Number("abc"),
		"number 01":      json.Number("01"),
		"number minus":   json.Number("-"),
		"number 1e-400":  json.Number("1e-400"),
		"raw":            []json.RawMessage{nil, json.RawMessage(`{"b":1,"a":[1, 2.0], "c" : "\u00e9\/"}`), json.RawMessage(" \"x\" \n")},
		"raw invalid":    json.RawMessage(`{`),
		"raw empty":      json.RawMessage{},
		"raw dup":        json.RawMessage(`{"a":1,"a":2}`),
		"raw surrogate":  json.RawMessage(`"\ud800"`),
		"raw 1e400":      json.RawMessage(`1e400`),
		"raw utf8":       json.RawMessage("\"\xff\""),
		"raw trailing":   json.RawMessage(`1 2`),
		"verdicts":       []governor.Verdict{governor.Allow, governor.Deny, governor.Modify},
		"bad verdict":    governor.Verdict(0),
		"reversibility":  []governor.Reversibility{0, governor.Compensable, 9},
		"bad text":       canonBadText("x"),
		"raw marshaler":  map[string]canonRaw{"a": `[1,  {"y":2,"x":1}]`, "b": `null`},
		"bad marshaler":  canonRaw(`[1,`),
		"all": &canonAll{Str: "s<", OmitF: 0.5, OmitI64: -1 << 60, NStr: "n\x00", Uint8: 8, F32: 0.1, Ptr: &canonInner{A: 0.5}, Slice: []string{}, Map: map[string]int{"b": 1, "a": 2},
			Any: &governor.VerdictState{Verdict: "continue"}, Arr: [3]byte{1, 2, 3}, Bytes: []byte("bytes\xff"), Num: "1.0",
			Raw: json.RawMessage(`{"b":1,"a":2}`), Verdict: governor.Escalate, Rev: governor.Irreversible, PtrText: 3, ValText: 4,
			PtrJSON: canonPtrJSON{N: 5}, Texts: []canonPtrText{1, 2}, TextMap: map[string]canonPtrText{"k": 9}, Skip: "no", Dash: "dash",
			Bad: "bad", Wide: 1, Math: 2, Nested: map[string]any{"x": []any{1.5, nil, true, "s", map[string]any{}, []any{}}},
			Named: canonNamedMap{"z": 1, "y": 2}, TBytes: []canonTextBytes{'a', 'b'}, Floats: map[string]float64{"b": 0.25, "a": -1}},
		"all zero":              canonAll{},
		"all zero but verdict":  canonAll{Verdict: governor.Deny},
		"negative zero omitted": []canonAll{{Verdict: governor.Deny, OmitF: math.Copysign(0, -1)}},
		"all by value":          []canonAll{{Str: "in a slice", PtrText: 1, Verdict: governor.Allow}},
		"all in map":            map[string]canonAll{"m": {Str: "not addressable", PtrText: 2, PtrJSON: canonPtrJSON{N: 3}, Verdict: governor.Modify}},
		"all in any":            []any{canonAll{PtrText: 3, PtrJSON: canonPtrJSON{N: 4}, Verdict: governor.Suspend}},
		"ptr text nil":          []*canonPtrText{nil, &ptrText},
		"ptr json nil":          []*canonPtrJSON{nil, {N: 1}},
		"val json":              []canonValJSON{true},
		"val json any":          map[string]any{"v": canonValJSON(false)},
		"embedded":              canonEmbedded{canonInner: canonInner{A: 1, B: "b"}, C: 2},
		"dup tagged":            canonDupTagged{A: 1, B: 2},
		"quoted":                canonQuoted{N: 1, F: 0.5},
		"omitzero":              []canonOmitZero{{}, {N: 1, T: time.Unix(0, 0).UTC()}},
		"func":                  canonFuncField{},
		"chan":                  make(chan int),
		"complex":               complex(1, 2),
		"int keys":              map[int]string{2: "b", 10: "a", -1: "c"},
		"text keys":             map[governor.Verdict]int{governor.Deny: 1, governor.Allow: 2},
		"bool keys":             map[bool]int{true: 1},
		"named keys":            map[canonNamedStr]canonNamedStr{"b": "1", "a": "2"},
		"empty":                 []any{[]any{}, map[string]any{}, []string{}, map[string]int{}, [0]int{}, []byte{}, struct{}{}},
		"nils":                  []any{[]any(nil), map[string]any(nil), []string(nil), map[string]int(nil), []byte(nil), (*int)(nil)},
		"pointers":              func() any { x := 5; p := &x; return &p }(),
		"nested any":            map[string]any{"a": []any{map[string]any{"b": []any{[]any{"c", 1.0}, map[string]any{"\U0001F600": nil, "\uffff": false}}}}},
		"time":                  time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		"cycle map":             cyclic,
		"cycle ptr":             loop,
		"cycle any":             anyLoop,
		"deep ptrs":             ptrChain,
		"depth 10000":           canonNested(10000, 1.0),
		"depth 10001":           canonNested(10001, 1.0),
		"raw depth ok":          canonNested(5000, json.RawMessage(strings.Repeat("[", 5000)+strings.Repeat("]", 5000))),
		"raw depth over":        canonNested(5000, json.RawMessage(strings.Repeat("[", 5001)+strings.Repeat("]", 5001))),
		"struct depth":          canonNested(9999, canonInner{}),
		"struct depth+1":        canonNested(10000, canonInner{}),
		"params":                map[string]any{"amount": 900.0, "rows": int64(5000), "id": "9007199254740993", "list": []any{1.0, "a"}},
		"governor states":       []any{&governor.PrecheckState{Directives: []string{"d"}}, &governor.ReversibilityOutput{Level: governor.Compensable, Reason: "r"}, &governor.DeliberationInput{UCS: 0.61, Reversibility: governor.Irreversible}},
		"governor by value":     []any{governor.ReversibilityOutput{Level: governor.Reversible}, governor.EscalationInput{Level: 0}},
	}
	// The cases where json.Marshal or Canonicalize fails.
	failing := []string{"NaN", "Inf", "NaN32", "number 1e400", "number invalid", "number 01", "number minus", "raw invalid",
		"raw empty", "raw dup", "raw surrogate", "raw 1e400", "raw utf8", "raw trailing", "bad verdict", "bad text", "bad marshaler",
		"all zero", "func", "chan", "complex", "bool keys", "cycle map", "cycle ptr",
		"cycle any", "depth 10001", "raw depth over", "struct depth+1", "dup keys", "dup keys 2"}
	enc := &canonEncoder{}
	for name, v := range cases {
		if _, err := canonOld(v); (err != nil) != slices.Contains(failing, name) {
			t.Errorf("%s: Canonicalize(json.Marshal) error %v, unexpected", name, err)
		}
		canonSame(t, enc, name, v)
		canonSame(t, enc, name+" (again)", v) // the plans cached
		canonSame(t, &canonEncoder{}, name+" (fresh encoder)", v)
	}
}

// canonDecisions returns the decisions of the narrative goldens and of a
// stream of varied actions through one engine.
func canonDecisions(t *testing.T) []*governor.Decision {
	t.Helper()
	var out []*governor.Decision
	for _, tc := range narrativeCases() {
		e := narrativeEngine(t)
		if tc.setup != nil {
			tc.setup(t, e)
		}
		d, err := e.Evaluate(governor.Request{AgentID: tc.agent, Action: tc.action, Context: tc.context})
		narrMust(t, err)
		if d.Verdict != tc.want {
			t.Fatalf("%s: verdict %v, want %v", tc.name, d.Verdict, tc.want)
		}
		out = append(out, d)
	}
	e := narrativeEngine(t)
	types := []string{"read", "create", "refund", "delete", "export", "update_record", "launch"}
	targets := []string{"api.example.com/customers/1", "payments/orders/9", "records/customer/7", "elsewhere/x"}
	params := []map[string]any{nil, {}, {"amount": 80.0}, {"amount": json.Number("12345678901234567890")},
		{"big": int64(1<<53 + 1), "u": uint64(1 << 60), "n": json.Number("1.50"), "neg": json.Number("-9007199254740993")},
		{"note": "<b>\u2028\xff\x01", "\U0001F600": "emoji", "\uffff": []any{1.0, "x", nil, map[string]any{"deep": true}}},
		{"rows": 5000.0, "nan": math.NaN(), "inf": math.Inf(1)}}
	contexts := []governor.Context{{}, {Instruction: "refund the damaged order", Origin: "user_request"},
		{Instruction: "URGENT now", Origin: "agent_initiated", Urgency: "critical", InputCategory: "adversarial"}}
	for i := range 120 {
		agent := []string{"support-bot", "records-bot"}[i%2]
		a := governor.Action{ID: "act_" + strconv.Itoa(i), Type: types[i%len(types)], Target: targets[i/3%len(targets)],
			Parameters: params[i%len(params)], Source: []string{"", "api", "proxy"}[i%3], Method: []string{"", "DELETE"}[i/7%2]}
		d, err := e.Evaluate(governor.Request{AgentID: agent, Action: a, Context: contexts[i%len(contexts)]})
		if err != nil {
			continue // an action the engine refuses outright
		}
		out = append(out, d)
	}
	return out
}

// TestCanonEncoderDecisions checks the encoder against the old path on
// real decisions: the same bytes, and newTemplate finds the same values.
func TestCanonEncoderDecisions(t *testing.T) {
	decisions := canonDecisions(t)
	if len(decisions) < 100 {
		t.Fatalf("only %d decisions", len(decisions))
	}
	enc := &canonEncoder{}
	bufs := &encodeBufs{}
	verdicts := map[governor.Verdict]int{}
	for i, d := range decisions {
		verdicts[d.Verdict]++
		resolve := func(string) int64 { return int64(i) }
		e := assemble(d, resolve)
		e.Sequence, e.PrevHash = 0, ZeroHash
		want, err := canonOld(e)
		narrMust(t, err)
		tmpl, err := newTemplate(enc, assemble(d, resolve), bufs)
		narrMust(t, err)
		if !bytes.Equal(tmpl.body, want) {
			t.Fatalf("decision %d (%s): the encoder differs from Canonicalize(json.Marshal):\n got %s\nwant %s", i, d.ActionID, tmpl.body, want)
		}
		ps, pe, _ := topLevelValue(want, "prev_hash")
		ss, se, _ := topLevelValue(want, "sequence")
		if tmpl.prevStart != ps || tmpl.prevEnd != pe || tmpl.seqStart != ss || tmpl.seqEnd != se {
			t.Fatalf("decision %d: template offsets %d %d %d %d, want %d %d %d %d", i,
				tmpl.prevStart, tmpl.prevEnd, tmpl.seqStart, tmpl.seqEnd, ps, pe, ss, se)
		}
		rec, err := tmpl.seal(Head{Sequence: 41, Hash: narrativeFakePrevHash})
		narrMust(t, err)
		e.Sequence, e.PrevHash = 42, narrativeFakePrevHash
		sealed, err := canonOld(e)
		narrMust(t, err)
		if !bytes.Equal(rec.Body, sealed) || rec.Hash != hashHex(sealed) {
			t.Fatalf("decision %d: sealed body differs:\n got %s\nwant %s", i, rec.Body, sealed)
		}
	}
	if len(verdicts) < 4 {
		t.Errorf("decisions cover only verdicts %v", verdicts)
	}
}

// TestCanonEncoderConcurrent shares one encoder between goroutines that
// meet new types at the same time (run with -race).
func TestCanonEncoderConcurrent(t *testing.T) {
	enc := &canonEncoder{}
	values := []any{&canonAll{Ptr: &canonInner{}, Verdict: governor.Allow}, canonNested(3, &governor.PrecheckState{}), map[string]canonInner{"a": {}},
		canonEmbedded{}, &canonNode{Next: &canonNode{}}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				v := values[(g+i)%len(values)]
				want, _ := canonOld(v)
				got, err := enc.appendValue(nil, v, nil)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%T: got %q (%v), want %q", v, got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestCanonEncoderAllocs(t *testing.T) {
	v := &canonInner{A: 0.25, B: "text"}
	enc := &canonEncoder{}
	s := &canonState{}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf, _ = enc.appendValue(buf[:0], v, s) }); n != 0 {
		t.Errorf("%v allocations per struct, want 0", n)
	}
}

// FuzzCanonEncoder compares the encoder with Canonicalize(json.Marshal) on
// decoded JSON (as float64 and as json.Number), on arbitrary bytes as
// strings, map keys, raw JSON and base64, and on arbitrary number bits.
func FuzzCanonEncoder(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `null`, `{"b":[1,2.5,-0,1e21,1e-7,5e-324],"a":{"\uffff":1,"\ud83d\ude00":2}}`,
		`"\u2028<>&\u0000\ud800x"`, `[9007199254740993,-9007199254740993,123456789012345678901234567890]`,
		`{"amount":900,"note":"caf\u00e9","x":[true,false,null,{}]}`, "\"\xff\xfe\"", `0.1`, `1e400`, `[1.0E+2,0.000001]`,
		`{"a":1,"a":2}`, `{"\u00e9":1,"é":2}`} {
		f.Add([]byte(s), "seed\xff\u2028")
	}
	enc := &canonEncoder{}
	f.Fuzz(func(t *testing.T, data []byte, str string) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			canonSame(t, enc, "decoded", v)
			canonSame(t, enc, "decoded in parameters", &entryOut{Action: Action{Parameters: map[string]any{"p": v}}})
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var n any
		if dec.Decode(&n) == nil {
			canonSame(t, enc, "decoded with numbers", n)
			if m, ok := n.(map[string]any); ok {
				canonSame(t, enc, "safe numbers", safeNumbers(m))
			}
		}
		for _, s := range []string{str, string(data)} {
			canonSame(t, enc, "strings", &entryOut{AgentID: s, Action: Action{Type: s, Parameters: map[string]any{s: s, s + "\xff": []any{s}, "k": s}},
				Verdict: Verdict{Reasoning: s, Vetoes: []string{s}}, SemanticContext: governor.SemanticContext{PerTermDrift: map[string]float64{s: 1}},
				Pipeline: []stepOut{{Step: s, InputState: &governor.VerdictState{Verdict: s}, OutputState: map[string]string{s: s}}}})
			canonSame(t, enc, "number", json.Number(s))
		}
		canonSame(t, enc, "raw", json.RawMessage(data))
		canonSame(t, enc, "raw in any", map[string]any{"r": json.RawMessage(data), "b": data})
		canonSame(t, enc, "bytes", data)
		if len(data) >= 8 {
			bits := binary.LittleEndian.Uint64(data)
			canonSame(t, enc, "numbers", []any{math.Float64frombits(bits), math.Float32frombits(uint32(bits)),
				int64(bits), bits, int64(bits) >> (bits & 63), float64(int64(bits) >> (bits & 63))})
		}
	})
}

// BenchmarkCanonEncoder compares the encoder with the old path on the entry
// of BenchmarkEntryBuild.
func BenchmarkCanonEncoder(b *testing.B) {
	e, err := governor.New(governor.DefaultConfig())
	if err == nil {
		err = e.SetContract(governor.Contract{AgentID: "a", Scope: []string{"read"}})
	}
	if err != nil {
		b.Fatal(err)
	}
	d, err := e.Evaluate(governor.Request{AgentID: "a", Action: governor.Action{Type: "read", Target: "api.example.com/customers/1",
		Parameters: map[string]any{"fields": "name"}}})
	if err != nil {
		b.Fatal(err)
	}
	v := assemble(d, func(string) int64 { return 0 })
	b.Run("direct", func(b *testing.B) {
		var enc canonEncoder
		var s canonState
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = enc.appendValue(buf[:0], v, &s)
		}
	})
	b.Run("json+Canonicalize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = canonOld(v)
		}
	})
}
