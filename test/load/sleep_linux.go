package main

import (
	"syscall"
	"time"
)

// sleepUntil sleeps until t. The Go runtime's own timers wake a sleeper
// that has nothing else to do up to a millisecond late (its poller waits in
// whole milliseconds), which at 1,000 calls/s would delay most sends; the
// last stretch is therefore slept with nanosleep(2), to within ~0.1 ms,
// without spinning a core.
func sleepUntil(t time.Time) {
	for {
		w := time.Until(t)
		if w <= 0 {
			return
		}
		if w > 3*time.Millisecond {
			time.Sleep(w - 2*time.Millisecond)
			continue
		}
		ts := syscall.NsecToTimespec(int64(w))
		_ = syscall.Nanosleep(&ts, nil)
	}
}
