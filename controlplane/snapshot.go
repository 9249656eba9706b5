package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/redis/go-redis/v9"
)

// SnapshotStore keeps one snapshot of each agent's governance state — the
// JSON of a *governor.Snapshot — replacing it on every save: FileStore,
// RedisStore, MemoryStore, or any implementation that passes
// controlplanetest.RunSnapshots. A store keeps the bytes it is given as
// they are and does not read them; the Snapshotter decodes them. Methods
// are safe for concurrent use.
type SnapshotStore interface {
	// SaveSnapshot replaces the snapshot of agentID (not empty) with
	// snapshot. It returns once the snapshot is as durable as the store
	// promises.
	SaveSnapshot(ctx context.Context, agentID string, snapshot []byte) error
	// LoadSnapshot returns the snapshot of agentID, or ErrNotFound.
	LoadSnapshot(ctx context.Context, agentID string) ([]byte, error)
	// LoadSnapshots returns every snapshot, by agent id.
	LoadSnapshots(ctx context.Context) (map[string][]byte, error)
}

var (
	_ SnapshotStore = (*FileStore)(nil)
	_ SnapshotStore = (*RedisStore)(nil)
	_ SnapshotStore = (*MemoryStore)(nil)
)

func checkAgentID(agentID string) error {
	if agentID == "" {
		return errors.New("controlplane: snapshot: empty agent id")
	}
	return nil
}

// --- MemoryStore ---

// memSnapshots holds the snapshots of every MemoryStore, beside the stores
// and keyed weakly: an entry goes when its store is garbage collected.
var memSnapshots struct {
	mu sync.Mutex
	m  map[weak.Pointer[MemoryStore]]map[string][]byte
}

// snapshots returns s's snapshot map (under memSnapshots.mu), creating it
// when create is set; nil when there is none.
func (s *MemoryStore) snapshots(create bool) map[string][]byte {
	wp := weak.Make(s)
	if m, ok := memSnapshots.m[wp]; ok || !create {
		return m
	}
	if memSnapshots.m == nil {
		memSnapshots.m = map[weak.Pointer[MemoryStore]]map[string][]byte{}
	}
	m := map[string][]byte{}
	memSnapshots.m[wp] = m
	runtime.AddCleanup(s, func(wp weak.Pointer[MemoryStore]) {
		memSnapshots.mu.Lock()
		delete(memSnapshots.m, wp)
		memSnapshots.mu.Unlock()
	}, wp)
	return m
}

// SaveSnapshot implements SnapshotStore.
func (s *MemoryStore) SaveSnapshot(_ context.Context, agentID string, snapshot []byte) error {
	if err := checkAgentID(agentID); err != nil {
		return err
	}
	memSnapshots.mu.Lock()
	defer memSnapshots.mu.Unlock()
	s.snapshots(true)[agentID] = append([]byte(nil), snapshot...)
	return nil
}

// LoadSnapshot implements SnapshotStore.
func (s *MemoryStore) LoadSnapshot(_ context.Context, agentID string) ([]byte, error) {
	memSnapshots.mu.Lock()
	defer memSnapshots.mu.Unlock()
	b, ok := s.snapshots(false)[agentID]
	if !ok {
		return nil, fmt.Errorf("%w: snapshot of agent %q", ErrNotFound, agentID)
	}
	return append([]byte(nil), b...), nil
}

// LoadSnapshots implements SnapshotStore.
func (s *MemoryStore) LoadSnapshots(context.Context) (map[string][]byte, error) {
	memSnapshots.mu.Lock()
	defer memSnapshots.mu.Unlock()
	out := map[string][]byte{}
	for id, b := range s.snapshots(false) {
		out[id] = append([]byte(nil), b...)
	}
	return out, nil
}

// --- FileStore ---

const (
	snapshotsDir     = "agents"
	snapshotExt      = ".json"
	snapshotTemp     = ".snapshot-*.tmp"
	maxSnapshotFName = 255
)

// snapshotFileName is the file name of agentID's snapshot: the id with
// every byte but ASCII letters, digits, '-' and '_' written as %XX, and
// ".json".
func snapshotFileName(agentID string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(agentID); i++ {
		c := agentID[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	b.WriteString(snapshotExt)
	if b.Len() > maxSnapshotFName {
		return "", fmt.Errorf("controlplane: snapshot: agent id %.40q... is too long for a file name", agentID)
	}
	return b.String(), nil
}

// snapshotAgentID is the inverse of snapshotFileName; ok is false for a
// name snapshotFileName does not make.
func snapshotAgentID(name string) (id string, ok bool) {
	base, found := strings.CutSuffix(name, snapshotExt)
	if !found || base == "" {
		return "", false
	}
	id, err := url.PathUnescape(base)
	if err != nil {
		return "", false
	}
	if again, err := snapshotFileName(id); err != nil || again != name {
		return "", false
	}
	return id, true
}

// SaveSnapshot implements SnapshotStore. The snapshot of an agent is the
// file agents/<id>.json (mode 0600) in the store's directory (the id
// escaped as snapshotFileName does), replaced atomically: temporary file,
// fsync, rename, fsync of the directory.
func (s *FileStore) SaveSnapshot(ctx context.Context, agentID string, snapshot []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkAgentID(agentID); err != nil {
		return err
	}
	name, err := snapshotFileName(agentID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	dir := filepath.Join(s.dir, snapshotsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("controlplane: save snapshot of %q: %w", agentID, err)
	}
	tmp, err := os.CreateTemp(dir, snapshotTemp)
	if err != nil {
		return fmt.Errorf("controlplane: save snapshot of %q: %w", agentID, err)
	}
	tmpName := tmp.Name()
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(snapshot)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmpName, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("controlplane: save snapshot of %q: %w", agentID, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("controlplane: save snapshot of %q: %w", agentID, err)
	}
	return nil
}

// LoadSnapshot implements SnapshotStore.
func (s *FileStore) LoadSnapshot(ctx context.Context, agentID string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := snapshotFileName(agentID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	b, err := os.ReadFile(filepath.Join(s.dir, snapshotsDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: snapshot of agent %q", ErrNotFound, agentID)
	}
	if err != nil {
		return nil, fmt.Errorf("controlplane: load snapshot of %q: %w", agentID, err)
	}
	return b, nil
}

// LoadSnapshots implements SnapshotStore. It removes the temporary files
// of saves a crash interrupted and ignores files it did not write.
func (s *FileStore) LoadSnapshots(ctx context.Context) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	dir := filepath.Join(s.dir, snapshotsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("controlplane: load snapshots: %w", err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if ok, _ := filepath.Match(snapshotTemp, e.Name()); ok {
			_ = os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		id, ok := snapshotAgentID(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("controlplane: load snapshot of %q: %w", id, err)
		}
		out[id] = b
	}
	return out, nil
}

// --- RedisStore ---

// snapshotsKey is the hash of the agents' snapshots (see RedisStore).
func (s *RedisStore) snapshotsKey() string { return "{" + s.opts.Prefix + "}:agents" }

// SaveSnapshot implements SnapshotStore: it sets the agent's field of the
// snapshots hash.
func (s *RedisStore) SaveSnapshot(ctx context.Context, agentID string, snapshot []byte) error {
	if err := checkAgentID(agentID); err != nil {
		return err
	}
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	err = s.br.do(ctx, func() error { return s.client.HSet(ctx, s.snapshotsKey(), agentID, snapshot).Err() })
	if err != nil {
		return fmt.Errorf("controlplane: save snapshot of %q to redis: %w", agentID, err)
	}
	return nil
}

// LoadSnapshot implements SnapshotStore.
func (s *RedisStore) LoadSnapshot(ctx context.Context, agentID string) ([]byte, error) {
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var b []byte
	err = s.br.do(ctx, func() (err error) {
		b, err = s.client.HGet(ctx, s.snapshotsKey(), agentID).Bytes()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: snapshot of agent %q", ErrNotFound, agentID)
	}
	if err != nil {
		return nil, fmt.Errorf("controlplane: load snapshot of %q from redis: %w", agentID, err)
	}
	return b, nil
}

// snapshotPage is how many hash fields one HSCAN of LoadSnapshots asks for:
// a snapshot with full histories is about 100 KiB, so a page stays within
// a call's timeout.
const snapshotPage = 16

// LoadSnapshots implements SnapshotStore. It reads the hash in pages
// (HSCAN), each one call bounded by RedisOptions.Timeout.
func (s *RedisStore) LoadSnapshots(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	var cursor uint64
	for {
		kv, next, err := s.snapshotScan(ctx, cursor)
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = []byte(kv[i+1])
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}

// snapshotScan reads one page of the snapshots hash.
func (s *RedisStore) snapshotScan(ctx context.Context, cursor uint64) (kv []string, next uint64, err error) {
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer cancel()
	err = s.br.do(ctx, func() (err error) {
		kv, next, err = s.client.HScan(ctx, s.snapshotsKey(), cursor, "", snapshotPage).Result()
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("controlplane: load snapshots from redis: %w", err)
	}
	return kv, next, nil
}
