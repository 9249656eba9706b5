package ledger

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// appendScript appends a batch of records to one agent's chain if, and only
// if, the stored head is the one the batch was built on. All its keys carry
// the agent's hash tag, so in Redis Cluster they share one slot.
//
//	KEYS[1]  head hash ({seq, hash})
//	KEYS[2]  entries hash (decimal sequence -> encoded record)
//	KEYS[3:] verdict indexes used by the batch
//	ARGV[1], ARGV[2]  expected head sequence and hash
//	then per record: sequence, hash, index in KEYS of its verdict index
//	(0: none), encoded record
//
// It returns {1} when the batch is written, or {0, seq, hash}, the current
// head, when the head has moved.
var appendScript = redis.NewScript(`
local head = redis.call('HMGET', KEYS[1], 'seq', 'hash')
local seq, hash = head[1], head[2]
if not seq then seq, hash = '0', '` + ZeroHash + `' end
if seq ~= ARGV[1] or hash ~= ARGV[2] then
	return {0, seq, hash}
end
local entries, index = {}, {}
for i = 3, #ARGV, 4 do
	entries[#entries+1] = ARGV[i]
	entries[#entries+1] = ARGV[i+3]
	local v = tonumber(ARGV[i+2])
	if v > 0 then
		local z = index[v] or {}
		z[#z+1] = ARGV[i]
		z[#z+1] = ARGV[i]
		index[v] = z
	end
end
redis.call('HSET', KEYS[2], unpack(entries))
for v, z in pairs(index) do
	redis.call('ZADD', KEYS[v], unpack(z))
end
redis.call('HSET', KEYS[1], 'seq', ARGV[#ARGV-3], 'hash', ARGV[#ARGV-2])
return {1}
`)

// runAppend sends recs (which follow head and each other) in one script
// call. It reports whether they were written and, when not, the head that
// the store holds instead.
func (s *RedisStore) runAppend(ctx context.Context, k agentKeys, head Head, recs []*Record) (bool, Head, error) {
	keys := []string{k.head, k.entries}
	index := map[string]int{}
	args := make([]any, 0, 2+4*len(recs))
	args = append(args, strconv.FormatInt(head.Sequence, 10), head.Hash)
	for _, r := range recs {
		v := 0
		if r.Verdict != "" {
			if v = index[r.Verdict]; v == 0 {
				keys = append(keys, k.verdict(r.Verdict))
				v = len(keys)
				index[r.Verdict] = v
			}
		}
		args = append(args, strconv.FormatInt(r.Sequence, 10), r.Hash, v, encodeRecord(r))
	}
	res, err := appendScript.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return false, Head{}, err
	}
	if len(res) == 1 && res[0] == int64(1) {
		return true, Head{}, nil
	}
	if len(res) == 3 && res[0] == int64(0) {
		seqStr, _ := res[1].(string)
		hash, _ := res[2].(string)
		seq, err := strconv.ParseInt(seqStr, 10, 64)
		if err != nil || hash == "" {
			return false, Head{}, fmt.Errorf("%w: head of %s is %q, %q", ErrCorrupt, k.head, seqStr, hash)
		}
		return false, Head{Sequence: seq, Hash: hash}, nil
	}
	return false, Head{}, fmt.Errorf("ledger: unexpected reply from the append script: %v", res)
}

// recordVersion is the first byte of an encoded record.
const recordVersion = 1

// encodeRecord encodes the stored facts of r as the value of its field in
// the entries hash: a version byte (1), then prev_hash, hash, verdict and
// action id, each as a uvarint length and its bytes, then the body to the
// end. Agent id and sequence are not stored: they are the key and field.
func encodeRecord(r *Record) []byte {
	n := 1 + len(r.PrevHash) + len(r.Hash) + len(r.Verdict) + len(r.ActionID) + 4*binary.MaxVarintLen64 + len(r.Body)
	b := make([]byte, 0, n)
	b = append(b, recordVersion)
	for _, f := range [...]string{r.PrevHash, r.Hash, r.Verdict, r.ActionID} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return append(b, r.Body...)
}

// decodeRecord decodes what encodeRecord wrote; damage is ErrCorrupt.
func decodeRecord(agentID string, seq int64, v string) (*Record, error) {
	if len(v) == 0 || v[0] != recordVersion {
		return nil, fmt.Errorf("%w: record %s %d has an unknown encoding", ErrCorrupt, agentID, seq)
	}
	var f [4]string
	rest := v[1:]
	for i := range f {
		n, w := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
		if w <= 0 || n > uint64(len(rest)-w) {
			return nil, fmt.Errorf("%w: record %s %d is truncated", ErrCorrupt, agentID, seq)
		}
		f[i], rest = rest[w:w+int(n)], rest[w+int(n):]
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: record %s %d has no body", ErrCorrupt, agentID, seq)
	}
	return &Record{AgentID: agentID, Sequence: seq, PrevHash: f[0], Hash: f[1], Verdict: f[2], ActionID: f[3],
		Body: []byte(rest)}, nil
}
