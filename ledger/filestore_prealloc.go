package ledger

import (
	"bytes"
	"sync"
)

// Preallocation. An fsync of a write that grows the file must also commit
// the new size through the file system's journal; one of a write into space
// that already exists and holds zeros flushes the data alone. On this
// project's ext4 machines that halves the flush (BENCHMARKS.md, the ledger's
// fsync baseline). So the file store keeps zeroed, synced space ahead of the
// log's end, written by a goroutine of its own off the appends' path, and
// the log file is longer than its records: load treats a tail of zeros as
// unused space, and Close cuts it.

const preallocStep = 1 << 20 // bytes zeroed and synced at a time

// prealloc is the space ahead of the log's end. The committer reserves the
// region each batch will occupy; the zeroer extends the file behind it.
type prealloc struct {
	ahead int64 // bytes to keep zeroed beyond the log's end; 0: off

	mu     sync.Mutex
	cond   sync.Cond // signalled when an extension ends
	size   int64     // the file's length: records, then zeros
	busy   bool      // the zeroer is writing [size, size+step)
	failed bool      // an extension failed: the file grows with its writes
	wake   chan struct{}
	done   chan struct{}
}

// startPrealloc starts the zeroer with the file's current length.
func (s *FileStore) startPrealloc(size int64) {
	p := &s.pre
	p.cond.L = &p.mu
	p.size = size
	p.wake = make(chan struct{}, 1)
	p.done = make(chan struct{})
	p.wake <- struct{}{} // zero the space ahead before the first appends need it
	go s.zeroer()
}

// reserve is called by the committer before it writes [off, off+n): it
// waits while the zeroer writes the space the batch needs (the two never
// write the same bytes), and wakes the zeroer when less than ahead is left.
func (s *FileStore) reserve(off, n int64) {
	p := &s.pre
	if p.ahead <= 0 {
		return
	}
	p.mu.Lock()
	for p.busy && off+n > p.size {
		p.cond.Wait()
	}
	if off+n > p.size {
		p.size = off + n // this write grows the file; zeros go after it
	}
	low := !p.failed && p.size-(off+n) < p.ahead
	p.mu.Unlock()
	if low {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// zeroer extends the file with zeros, a step at a time, each synced, until
// ahead bytes lie beyond the log's end; it stops when the committer has.
func (s *FileStore) zeroer() {
	p := &s.pre
	defer close(p.done)
	zeros := make([]byte, min(preallocStep, p.ahead))
	for {
		select {
		case <-p.wake:
		case <-s.stopped:
			return
		}
		for {
			p.mu.Lock()
			if p.failed || p.size-s.end.Load() >= p.ahead {
				p.mu.Unlock()
				break
			}
			start := p.size
			p.busy = true
			p.mu.Unlock()
			_, err := s.f.WriteAt(zeros, start)
			if err == nil {
				err = s.f.Sync()
			}
			p.mu.Lock()
			p.busy = false
			if err == nil {
				p.size = start + int64(len(zeros))
			} else {
				p.failed = true // the committer's own writes report the disk's state
			}
			p.cond.Broadcast()
			p.mu.Unlock()
			select {
			case <-s.stopped:
				return
			default:
			}
		}
	}
}

// stopPrealloc waits for the zeroer (the committer has stopped) and cuts
// the unused zeros after end, so that a closed log is its records alone.
func (s *FileStore) stopPrealloc(end int64) error {
	p := &s.pre
	if p.ahead <= 0 {
		return nil
	}
	<-p.done
	return s.f.Truncate(end)
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
