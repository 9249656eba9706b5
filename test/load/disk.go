package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Fsync is the disk's fsync latency, probed in the directory the ledgers
// live in: n appends of an entry-sized record (4.8 KB), each followed by
// fsync, one at a time (µs).
type Fsync struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_us"`
	P99 float64 `json:"p99_us"`
	Max float64 `json:"max_us"`
}

func probeFsync(dir string, n int) (Fsync, error) {
	path := filepath.Join(dir, "fsync-probe")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return Fsync{}, err
	}
	defer os.Remove(path)
	defer f.Close()
	rec := append(bytes.Repeat([]byte("x"), 4800), '\n')
	ds := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(rec); err != nil {
			return Fsync{}, err
		}
		if err := f.Sync(); err != nil {
			return Fsync{}, err
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return Fsync{N: n, P50: micros(percentile(ds, 50)), P99: micros(percentile(ds, 99)), Max: micros(percentile(ds, 100))}, nil
}
