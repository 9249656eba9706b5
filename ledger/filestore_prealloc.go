package ledger

import (
	"bytes"
	"runtime"
)

// Preallocation. An fsync of a write that grows the file must also commit
// the new size and the new blocks; one of a write into space that already
// exists and holds zeros flushes the data alone. On this project's ext4
// machines that halves the flush (BENCHMARKS.md, the ledger's fsync
// baseline). So in sync mode the file store keeps zeroed, synced space ahead
// of the log's end, and the log file is longer than its records: load treats
// a tail of zeros as unused space, and Close cuts it.
//
// The committer zeroes that space itself, a small step at a time, only while
// no record is queued. Zeroing on a goroutine of its own would be simpler,
// but a flush that overlaps a step's write and fsync waits for the step's
// data too: measured, such flushes took 2 – 5 times as long, and they were
// the slowest percent of appends. Here an append that arrives during a step
// waits for that step alone, a flush's worth of time; under a load that
// leaves the committer no idle moment the space runs out, and batches grow
// the file as they would without preallocation.

const preallocStep = 64 << 10 // bytes zeroed and synced at a time

// prealloc is the space ahead of the log's end. Only the committer uses it.
type prealloc struct {
	ahead  int64  // bytes to keep zeroed beyond the log's end; 0: off
	size   int64  // the file's length: records, then zeros
	failed bool   // a step failed: the file grows with its writes from now on
	zeros  []byte // one step of zeros
}

// reserve notes that the committer writes [off, off+n).
func (p *prealloc) reserve(off, n int64) {
	p.size = max(p.size, off+n) // a write past the zeros grows the file
}

// short reports whether less than ahead of zeroed space lies beyond end.
func (p *prealloc) short(end int64) bool {
	return p.ahead > 0 && !p.failed && p.size-end < p.ahead
}

// next returns the next queued record (ok false once the queue is closed
// and drained). While none is queued and the zeroed space beyond end is
// short, it zeroes one more step first. Before each step it yields, for the
// reason commit does before a flush: the appenders it has just acknowledged
// would otherwise wait in this P's run queue for the step's system calls.
func (s *FileStore) next(end int64) (r *writeReq, ok bool) {
	for s.pre.short(end) {
		runtime.Gosched()
		select {
		case r, ok = <-s.queue:
			return r, ok
		default:
		}
		s.zeroStep()
	}
	r, ok = <-s.queue
	return r, ok
}

// zeroStep writes and syncs one step of zeros at the file's end. If that
// fails, zeroing stops: the committer's own writes report the disk's state.
func (s *FileStore) zeroStep() {
	p := &s.pre
	if p.zeros == nil {
		p.zeros = make([]byte, preallocStep)
	}
	_, err := s.f.WriteAt(p.zeros, p.size)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		p.failed = true
		return
	}
	p.size += preallocStep
}

// zeroSector reports whether b holds a whole 512-byte sector, aligned at its
// offset in the file, that is all zeros: a part of a frame that never
// reached the disk (disks write sectors whole; preallocated space is zeros).
func zeroSector(b []byte, off int64) bool {
	const sector = 512
	var zero [sector]byte
	i := (sector - off%sector) % sector
	for ; i+sector <= int64(len(b)); i += sector {
		if bytes.Equal(b[i:i+sector], zero[:]) {
			return true
		}
	}
	return false
}
