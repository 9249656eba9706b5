package ledger_test

import (
	"testing"

	"github.com/vigilhq/vigil/ledger"
	"github.com/vigilhq/vigil/ledger/ledgertest"
)

func fileFactory(opts ledger.FileOptions) ledgertest.Factory {
	dirs := map[ledger.Store]string{}
	open := func(t *testing.T, dir string) ledger.Store {
		s, err := ledger.OpenFileStore(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		dirs[s] = dir
		return s
	}
	return ledgertest.Factory{
		Open: func(t *testing.T) ledger.Store { return open(t, t.TempDir()) },
		Reopen: func(t *testing.T, s ledger.Store) ledger.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, dirs[s])
		},
	}
}

func TestFileStoreConformance(t *testing.T) {
	for _, mode := range []ledger.Durability{ledger.DurabilitySync, ledger.DurabilityProcess} {
		t.Run(string(mode), func(t *testing.T) {
			ledgertest.Run(t, fileFactory(ledger.FileOptions{Durability: mode}))
		})
	}
}
