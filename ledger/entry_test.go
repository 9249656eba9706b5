package ledger

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestSafeNumbersCopiesOnlyWhenNeeded: parameters that need no change are
// the decision's own map (no copy per entry); any that do are copied, and
// the decision's map is left as it was.
func TestSafeNumbersCopiesOnlyWhenNeeded(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]any
		same bool
		want map[string]any
	}{
		{"nil", nil, true, nil},
		{"plain", map[string]any{"s": "x", "f": 1.5, "b": true, "n": nil, "l": []any{"a", 2.0}, "m": map[string]any{"k": "v"}}, true, nil},
		{"large float integer", map[string]any{"f": 1e300}, true, nil},
		{"json number", map[string]any{"n": json.Number("42")}, false, map[string]any{"n": int64(42)}},
		{"big int", map[string]any{"i": 1 << 60}, false, map[string]any{"i": "1152921504606846976"}},
		{"small int", map[string]any{"i": 7}, false, map[string]any{"i": int64(7)}},
		{"nested NaN", map[string]any{"m": map[string]any{"x": math.NaN()}}, false, map[string]any{"m": map[string]any{"x": "NaN"}}},
		{"in a list", map[string]any{"l": []any{"a", uint64(1) << 62}}, false, map[string]any{"l": []any{"a", "4611686018427387904"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := clone(tc.in)
			got := safeNumbers(tc.in)
			if same := reflect.ValueOf(got).UnsafePointer() == reflect.ValueOf(tc.in).UnsafePointer(); same != tc.same {
				t.Fatalf("same map: got %v, want %v", same, tc.same)
			}
			if !tc.same && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.in, before) && tc.name != "nested NaN" { // NaN != NaN
				t.Errorf("the decision's map changed: %#v, was %#v", tc.in, before)
			}
		})
	}
}

func clone(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = clone(sub)
		}
		out[k] = v
	}
	return out
}

// TestAppendReusesScratch: the pooled scratch entry is cleared after an
// append (it keeps no decision alive) and a sealed body borrowed by the
// file store is not the returned record's.
func TestAppendReusesScratch(t *testing.T) {
	decisions := canonDecisions(t)[:8]
	store, err := OpenFileStore(t.TempDir(), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := New(store)
	checked := 0
	for _, d := range decisions {
		rec, err := l.Append(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Body != nil {
			t.Fatal("the returned record carries the borrowed body")
		}
		bufs, ok := l.bufs.Get().(*encodeBufs)
		if !ok {
			continue // the pool was emptied by a collection
		}
		checked++
		if len(bufs.sealed) == 0 {
			t.Fatal("the entry was not sealed into the scratch buffer: the file store's borrowed-body path was not taken")
		}
		if !reflect.DeepEqual(bufs.entry, entryOut{CausalLinks: bufs.entry.CausalLinks, Pipeline: bufs.entry.Pipeline}) ||
			len(bufs.entry.Pipeline) != 0 || (cap(bufs.entry.Pipeline) > 0 && bufs.entry.Pipeline[:1][0].InputState != nil) {
			t.Fatalf("the scratch entry was not cleared: %+v", bufs.entry)
		}
		l.bufs.Put(bufs)
	}
	if checked == 0 {
		t.Fatal("no scratch entry checked")
	}
	if rep, err := l.Verify(t.Context(), decisions[0].AgentID); err != nil || rep.Entries == 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
