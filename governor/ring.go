package governor

import "encoding/json"

// ring is a bounded FIFO: pushing onto a full ring drops the oldest item. It
// marshals to a JSON array, oldest first.
type ring[T any] struct {
	buf  []T
	head int // index of the oldest item when full
	max  int
}

func newRing[T any](max int) ring[T] { return ring[T]{max: max} }

func (r *ring[T]) push(v T) {
	if len(r.buf) < r.max {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.head] = v
	r.head = (r.head + 1) % r.max
}

func (r *ring[T]) len() int { return len(r.buf) }

// at returns the i-th item, 0 the oldest.
func (r *ring[T]) at(i int) T { return r.buf[(r.head+i)%len(r.buf)] }

// last returns the i-th newest item, 0 the newest.
func (r *ring[T]) last(i int) T { return r.at(len(r.buf) - 1 - i) }

// items returns a copy, oldest first.
func (r *ring[T]) items() []T {
	out := make([]T, 0, len(r.buf))
	for i := range r.buf {
		out = append(out, r.at(i))
	}
	return out
}

// reset replaces the contents with items (oldest first), keeping the newest
// max of them.
func (r *ring[T]) reset(items []T) {
	r.buf, r.head = nil, 0
	for _, v := range items {
		r.push(v)
	}
}

func (r ring[T]) MarshalJSON() ([]byte, error) { return json.Marshal(r.items()) }
