package ledger

import (
	"math"
	"sort"
)

// posBlockLen is how many records one index block holds at most.
const posBlockLen = 1024

// posIndex locates one chain's records in the log: 9 bytes a record in
// fixed blocks (a 4-byte offset from the block's base, a 4-byte length, a
// verdict code), instead of a 16-byte pos in a slice that doubles as it
// grows. It is append-only: a copy taken under the chain's read lock
// (view) stays valid for the records it held, while the writer appends.
type posIndex struct {
	blocks []*posBlock
	n      int
}

type posBlock struct {
	first   int   // index of the block's first record
	base    int64 // log offset of the block's first record
	count   int   // records written (only the writer reads it)
	delta   [posBlockLen]uint32
	size    [posBlockLen]uint32
	verdict [posBlockLen]uint8
}

// add appends the position of the next record.
func (x *posIndex) add(p pos) {
	var b *posBlock
	if k := len(x.blocks); k > 0 {
		b = x.blocks[k-1]
	}
	// A new block when the last is full, or when the offset does not fit
	// 32 bits above its base (other agents wrote 4 GiB in between).
	if b == nil || b.count == posBlockLen || p.off-b.base > math.MaxUint32 || p.off < b.base {
		b = &posBlock{first: x.n, base: p.off}
		x.blocks = append(x.blocks, b)
	}
	i := b.count
	b.delta[i], b.size[i], b.verdict[i] = uint32(p.off-b.base), p.n, p.verdict
	b.count++
	x.n++
}

// len returns the number of records.
func (x posIndex) len() int { return x.n }

// at returns the position of record i (0-based; i < len()).
func (x posIndex) at(i int) pos {
	bs := x.blocks
	k := len(bs) - 1
	if bs[k].first > i { // not in the last block: search
		k = sort.Search(len(bs), func(j int) bool { return bs[j].first > i }) - 1
	}
	b := bs[k]
	j := i - b.first
	return pos{off: b.base + int64(b.delta[j]), n: b.size[j], verdict: b.verdict[j]}
}

// view returns a copy for reading without the lock: the records it holds
// never change.
func (x posIndex) view() posIndex {
	return posIndex{blocks: x.blocks[:len(x.blocks):len(x.blocks)], n: x.n}
}
