package ledger

import (
	"testing"

	"github.com/vigilhq/vigil/governor"
)

// BenchmarkEntryBuild: the CPU cost of turning a decision into a sealed
// record (assemble, encode, canonicalize, splice, hash), without a store,
// with the scratch buffers Ledger.Append uses for the file store.
func BenchmarkEntryBuild(b *testing.B) {
	e, err := governor.New(governor.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	if err := e.SetContract(governor.Contract{AgentID: "a", Archetype: "customer-experience", Scope: []string{"read"},
		Authority: []string{"!has(action.parameters.amount) || action.parameters.amount <= 500"}}); err != nil {
		b.Fatal(err)
	}
	d, err := e.Evaluate(governor.Request{AgentID: "a", Action: governor.Action{Type: "read", Target: "api.example.com/customers/1", Parameters: map[string]any{"fields": "name"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	bufs := &encodeBufs{}
	var enc canonEncoder
	for b.Loop() {
		assembleInto(&bufs.entry, d, func(string) int64 { return 0 })
		t, err := newTemplate(&enc, &bufs.entry, bufs)
		if err != nil {
			b.Fatal(err)
		}
		t.into = &bufs.sealed
		if _, err := t.seal(Head{Sequence: 41, Hash: ZeroHash}); err != nil {
			b.Fatal(err)
		}
		bufs.entry.release()
	}
}
