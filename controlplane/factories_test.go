package controlplane_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/test/redistest"
)

// fileFactory gives a conformance suite its open and reopen functions over
// FileStores: open makes a store in a fresh directory; reopen closes it and
// opens the same directory. S is the store interface the suite tests.
func fileFactory[S any]() (func(*testing.T) S, func(*testing.T, S) S) {
	var mu sync.Mutex
	dirs := map[*controlplane.FileStore]string{}
	open := func(t *testing.T, dir string) S {
		s := openFileStore(t, dir)
		mu.Lock()
		dirs[s] = dir
		mu.Unlock()
		return any(s).(S)
	}
	reopen := func(t *testing.T, s S) S {
		fs := any(s).(*controlplane.FileStore)
		if err := fs.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		mu.Lock()
		dir := dirs[fs]
		mu.Unlock()
		return open(t, dir)
	}
	return func(t *testing.T) S { return open(t, filepath.Join(t.TempDir(), "cp")) }, reopen
}

// redisFactory is fileFactory over RedisStores on one private redis-server:
// each open uses a fresh key prefix, and reopen a new store on the same one.
func redisFactory[S any](t *testing.T, label string) (func(*testing.T) S, func(*testing.T, S) S) {
	client := redisClient(t, redistest.Start(t))
	var (
		mu       sync.Mutex
		prefixes = map[*controlplane.RedisStore]string{}
		n        atomic.Int64
	)
	open := func(t *testing.T, prefix string) S {
		s := openRedisStore(t, client, prefix)
		mu.Lock()
		prefixes[s] = prefix
		mu.Unlock()
		return any(s).(S)
	}
	reopen := func(t *testing.T, s S) S {
		rs := any(s).(*controlplane.RedisStore)
		if err := rs.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		mu.Lock()
		prefix := prefixes[rs]
		mu.Unlock()
		return open(t, prefix)
	}
	return func(t *testing.T) S { return open(t, fmt.Sprintf("%s:%d", label, n.Add(1))) }, reopen
}
