package ledger_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vigilhq/vigil/ledger"
	"github.com/vigilhq/vigil/ledger/ledgertest"
)

// FuzzVerifyStream feeds offline verification, which reads files from
// anywhere, arbitrary input. It must not panic; the report must agree with
// the error; a broken chain is reported at the entry after the last good
// one; and the answer must not depend on how the lines are batched.
func FuzzVerifyStream(f *testing.F) {
	var export bytes.Buffer
	head := ledger.Head{Hash: ledger.ZeroHash}
	for i, verdict := range []string{"ALLOW", "DENY", "ALLOW"} {
		r := ledgertest.Record("bot", head, verdict, "act-"+string(rune('a'+i)))
		export.Write(r.JSON())
		export.WriteByte('\n')
		head = ledger.Head{Sequence: r.Sequence, Hash: r.Hash}
	}
	good := export.Bytes()
	if r, err := ledger.VerifyStream(bytes.NewReader(good)); err != nil || !r.Valid || r.Entries != 3 {
		f.Fatalf("the seed export: got %+v, %v; want a valid chain of 3", r, err)
	}
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"DENY"`), []byte(`"ALLOW"`), 1))
	f.Add(bytes.Replace(good, []byte("\n"), []byte("\n\n  \n"), -1))
	f.Add(good[:len(good)/2])
	f.Add([]byte("{}\n[]\nnull\n"))
	f.Add([]byte(`{"agent_id":"bot","sequence":1,"hash":"00"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ledger.VerifyStream(bytes.NewReader(data))
		if r.Valid != (err == nil) {
			t.Fatalf("report %+v with error %v", r, err)
		}
		var ve *ledger.VerifyError
		if errors.As(err, &ve) && (r.FirstInvalid != r.Entries+1 || ve.Sequence != r.FirstInvalid) {
			t.Fatalf("broken at %d (error says %d) after %d good entries", r.FirstInvalid, ve.Sequence, r.Entries)
		}
		for _, b := range []struct{ batch, depth int }{{1, 1}, {2, 1}} {
			r2, err2 := ledger.VerifyStreamInBatches(bytes.NewReader(data), b.batch, b.depth)
			if r2 != r || errors.Is(err2, ledger.ErrChainBroken) != errors.Is(err, ledger.ErrChainBroken) || (err == nil) != (err2 == nil) {
				t.Fatalf("batches of %d, %d in flight: got %+v, %v; default batches gave %+v, %v", b.batch, b.depth, r2, err2, r, err)
			}
		}
	})
}
