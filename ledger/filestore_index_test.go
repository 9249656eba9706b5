package ledger

import (
	"math"
	"testing"
	"unsafe"
)

func TestPosIndex(t *testing.T) {
	tests := []struct {
		name string
		offs func(i int) int64 // the log offset of record i
		n    int
	}{
		{"one partial block", func(i int) int64 { return 8 + int64(i)*100 }, 10},
		{"several full blocks", func(i int) int64 { return 8 + int64(i)*4800 }, 3*posBlockLen + 7},
		{"offsets 4 GiB apart start new blocks early", func(i int) int64 { return 8 + int64(i)*(math.MaxUint32/3) }, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var x posIndex
			for i := range tc.n {
				x.add(pos{off: tc.offs(i), n: uint32(100 + i), verdict: uint8(i % 6)})
			}
			if x.len() != tc.n {
				t.Fatalf("len: got %d, want %d", x.len(), tc.n)
			}
			v := x.view()
			for i := range tc.n {
				want := pos{off: tc.offs(i), n: uint32(100 + i), verdict: uint8(i % 6)}
				if got := v.at(i); got != want {
					t.Fatalf("at(%d): got %+v, want %+v", i, got, want)
				}
			}
		})
	}
}

func TestPosIndexIsCompact(t *testing.T) {
	perRecord := float64(unsafe.Sizeof(posBlock{})) / posBlockLen
	if perRecord > 9.1 {
		t.Errorf("index: %.2f bytes a record, want about 9", perRecord)
	}
}
