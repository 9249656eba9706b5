package ledger

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// The file store's record format: a frame of u32 payload length and u32
// CRC-32C, then the payload. Validation of records before they are framed
// lives here too.

// validRecord checks a built record before it is queued.
func validRecord(agentID string, head Head, rec *Record) error {
	if rec == nil {
		return errors.New("ledger: build returned no record")
	}
	if rec.AgentID != agentID {
		return fmt.Errorf("ledger: record of agent %q appended to %q", rec.AgentID, agentID)
	}
	if err := checkLink(head, rec); err != nil {
		return err
	}
	if len(rec.Hash) != 64 || !isHex(rec.Hash) || len(rec.PrevHash) != 64 || !isHex(rec.PrevHash) {
		return errors.New("ledger: hash and prev_hash must be 64 lowercase hex digits")
	}
	if len(rec.Body) < 2 || rec.Body[0] != '{' || rec.Body[len(rec.Body)-1] != '}' {
		return errors.New("ledger: record body must be a JSON object")
	}
	if len(rec.AgentID) > 0xffff || len(rec.ActionID) > 0xffff || len(rec.Verdict) > 0xff || len(rec.Body) > maxPayload/2 {
		return errors.New("ledger: record fields too large")
	}
	return nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Payload layout (little endian):
//
//	u16 agent length, agent | u64 sequence | 32 bytes hash | 32 bytes prev hash
//	u8 verdict length, verdict | u16 action id length, action id | body (rest)
//
// appendFrame appends r's frame to dst and returns it with the frame's
// length.
func appendFrame(dst []byte, r *Record) ([]byte, int) {
	n := 2 + len(r.AgentID) + 8 + 32 + 32 + 1 + len(r.Verdict) + 2 + len(r.ActionID) + len(r.Body)
	start := len(dst)
	b := slices.Grow(dst, frameHead+n)
	b = append(b, make([]byte, frameHead)...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.AgentID)))
	b = append(b, r.AgentID...)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Sequence))
	b, _ = hex.AppendDecode(b, []byte(r.Hash))
	b, _ = hex.AppendDecode(b, []byte(r.PrevHash))
	b = append(b, byte(len(r.Verdict)))
	b = append(b, r.Verdict...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.ActionID)))
	b = append(b, r.ActionID...)
	b = append(b, r.Body...)
	frame := b[start:]
	binary.LittleEndian.PutUint32(frame[0:4], uint32(n))
	binary.LittleEndian.PutUint32(frame[4:8], crc32.Checksum(frame[frameHead:], castagnoli))
	return b, frameHead + n
}

func decodePayload(p []byte) (*Record, error) {
	r := &Record{}
	take := func(n int) ([]byte, error) {
		if len(p) < n {
			return nil, errors.New("truncated payload")
		}
		v := p[:n]
		p = p[n:]
		return v, nil
	}
	b, err := take(2)
	if err != nil {
		return nil, err
	}
	if b, err = take(int(binary.LittleEndian.Uint16(b))); err != nil {
		return nil, err
	}
	r.AgentID = string(b)
	if b, err = take(8); err != nil {
		return nil, err
	}
	r.Sequence = int64(binary.LittleEndian.Uint64(b))
	if b, err = take(32); err != nil {
		return nil, err
	}
	r.Hash = hex.EncodeToString(b)
	if b, err = take(32); err != nil {
		return nil, err
	}
	r.PrevHash = hex.EncodeToString(b)
	if b, err = take(1); err != nil {
		return nil, err
	}
	if b, err = take(int(b[0])); err != nil {
		return nil, err
	}
	r.Verdict = string(b)
	if b, err = take(2); err != nil {
		return nil, err
	}
	if b, err = take(int(binary.LittleEndian.Uint16(b))); err != nil {
		return nil, err
	}
	r.ActionID = string(b)
	r.Body = p
	return r, nil
}

// byteReader reads the log sequentially with a buffer.
type byteReader struct {
	r   io.ReaderAt
	off int64
	buf []byte
	pos int
}

func newByteReader(r io.ReaderAt, off int64) *byteReader { return &byteReader{r: r, off: off} }

func (b *byteReader) readFull(dst []byte) error {
	for len(dst) > 0 {
		if b.pos == len(b.buf) {
			if b.buf == nil {
				b.buf = make([]byte, 1<<20)
			}
			n, err := b.r.ReadAt(b.buf[:cap(b.buf)], b.off)
			if n == 0 {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
			b.buf, b.pos, b.off = b.buf[:n], 0, b.off+int64(n)
		}
		c := copy(dst, b.buf[b.pos:])
		b.pos += c
		dst = dst[c:]
	}
	return nil
}
