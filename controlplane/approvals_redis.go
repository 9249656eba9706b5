package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	_ ApprovalStore   = (*RedisStore)(nil)
	_ ApprovalWatcher = (*RedisStore)(nil)
)

// The approval keys of a RedisStore, under the store's hash tag (with the
// default prefix):
//
//	{vigil:cp}:approvals           hash: approval id -> the approval's JSON
//	{vigil:cp}:approvals:pending   sorted set: the ids of the pending approvals (score: created_at, Unix µs)
//	{vigil:cp}:approvals:decided   pub/sub channel: the id of each approval decided or expired
func (s *RedisStore) approvalsKey() string { return "{" + s.opts.Prefix + "}:approvals" }

func (s *RedisStore) pendingKey() string { return "{" + s.opts.Prefix + "}:approvals:pending" }

// ApprovalChannel returns the pub/sub channel on which the store signals
// approval decisions.
func (s *RedisStore) ApprovalChannel() string { return "{" + s.opts.Prefix + "}:approvals:decided" }

// createApprovalScript stores a new approval and indexes it when pending
// (KEYS: the hash, the pending set; ARGV: id, encoding, score, "1" when
// pending). It returns 0 when the id is taken.
var createApprovalScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
if ARGV[4] == '1' then redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) end
return 1
`)

// decideApprovalScript is the compare-and-set of a decision (KEYS: the
// hash, the pending set; ARGV: id, encoding, channel): it replaces the
// approval only while its stored status is "pending", drops it from the
// pending set and publishes its id, in one atomic step. It returns 1 when
// done, 0 for an unknown id, -1 when the approval is no longer pending.
var decideApprovalScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
local ok, doc = pcall(cjson.decode, cur)
if not ok or type(doc) ~= 'table' then return redis.error_reply('approval ' .. ARGV[1] .. ' unreadable') end
if doc['status'] ~= 'pending' then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return 1
`)

// CreateApproval implements ApprovalStore: HSETNX on the approvals hash
// and, for a pending approval, ZADD to the pending set, in one script.
func (s *RedisStore) CreateApproval(ctx context.Context, a Approval) error {
	if a.ID == "" {
		return errors.New("controlplane: approval without an id")
	}
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("controlplane: encode approval %s: %w", a.ID, err)
	}
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	pending := "0"
	if a.Pending() {
		pending = "1"
	}
	var n int64
	err = s.br.do(ctx, func() (err error) {
		n, err = createApprovalScript.Run(ctx, s.client, []string{s.approvalsKey(), s.pendingKey()},
			a.ID, b, a.CreatedAt.UnixMicro(), pending).Int64()
		return err
	})
	if err != nil {
		return fmt.Errorf("controlplane: create approval %s in redis: %w", a.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: approval %s exists", ErrConflict, a.ID)
	}
	return nil
}

// GetApproval implements ApprovalStore.
func (s *RedisStore) GetApproval(ctx context.Context, id string) (Approval, error) {
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return Approval{}, err
	}
	defer cancel()
	var raw string
	err = s.br.do(ctx, func() (err error) {
		raw, err = s.client.HGet(ctx, s.approvalsKey(), id).Result()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return Approval{}, fmt.Errorf("%w: no approval %s", ErrNotFound, id)
	}
	if err != nil {
		return Approval{}, fmt.Errorf("controlplane: read approval %s from redis: %w", id, err)
	}
	return decodeApproval(id, []byte(raw))
}

// DecideApproval implements ApprovalStore: a script compares the stored
// status with "pending", writes a, drops it from the pending set and
// publishes its id on ApprovalChannel, atomically, so the signal never
// precedes the write and two sidecars can never both decide.
func (s *RedisStore) DecideApproval(ctx context.Context, a Approval) error {
	if err := checkDecided(&a); err != nil {
		return err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("controlplane: encode approval %s: %w", a.ID, err)
	}
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	var n int64
	err = s.br.do(ctx, func() (err error) {
		n, err = decideApprovalScript.Run(ctx, s.client, []string{s.approvalsKey(), s.pendingKey()},
			a.ID, b, s.ApprovalChannel()).Int64()
		return err
	})
	if err != nil {
		return fmt.Errorf("controlplane: decide approval %s in redis: %w", a.ID, err)
	}
	switch n {
	case 0:
		return fmt.Errorf("%w: no approval %s", ErrNotFound, a.ID)
	case -1:
		return fmt.Errorf("%w: approval %s is no longer pending", ErrConflict, a.ID)
	}
	return nil
}

// ListApprovals implements ApprovalStore. The pending ones are read through
// the pending set (they are few: each lives at most its hold window); any
// other selection reads the whole approvals hash and filters in the client,
// which suits the thousands of approvals a fleet gathers, not millions
// (nothing deletes decided approvals yet).
func (s *RedisStore) ListApprovals(ctx context.Context, status string, limit int) ([]Approval, error) {
	ctx, cancel, err := s.call(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	raws := map[string]string{}
	err = s.br.do(ctx, func() error {
		if status != ApprovalPending {
			all, err := s.client.HGetAll(ctx, s.approvalsKey()).Result()
			raws = all
			return err
		}
		ids, err := s.client.ZRange(ctx, s.pendingKey(), 0, -1).Result()
		if err != nil || len(ids) == 0 {
			return err
		}
		vals, err := s.client.HMGet(ctx, s.approvalsKey(), ids...).Result()
		if err != nil {
			return err
		}
		for i, v := range vals {
			if str, ok := v.(string); ok {
				raws[ids[i]] = str
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("controlplane: list approvals from redis: %w", err)
	}
	out := []Approval{}
	for id, raw := range raws {
		a, err := decodeApproval(id, []byte(raw))
		if err != nil {
			return nil, err
		}
		if status == "" || a.Status == status {
			out = append(out, a)
		}
	}
	return newestFirst(out, limit), nil
}

// WatchApprovals implements ApprovalWatcher: it subscribes to
// ApprovalChannel and calls decided with each id published there, and
// with "" after every subscription (the first, and each one go-redis makes
// when it reconnects). It returns nil when ctx ends, ErrClosed when the
// store is closed, and an error when the client is closed.
func (s *RedisStore) WatchApprovals(ctx context.Context, decided func(id string)) error {
	return s.subscribe(ctx, s.ApprovalChannel(), func() { decided("") }, func(id string) {
		if id != "" {
			decided(id)
		}
	})
}
