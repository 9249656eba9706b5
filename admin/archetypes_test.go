package admin_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin"
	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

func TestListArchetypes(t *testing.T) {
	srv := newServer(t, admin.Options{Governor: newEngine(t)})
	res := call(t, srv, http.MethodGet, "/v1/archetypes", keyViewer, "")
	if res.status != http.StatusOK {
		t.Fatalf("status: got %d, want 200 (body %s)", res.status, res.body)
	}
	var list wire.ArchetypeList
	res.decode(t, &list)
	if got, want := len(list.Archetypes), len(governor.Archetypes()); got != want {
		t.Fatalf("archetypes: got %d, want %d", got, want)
	}
	if !slices.IsSortedFunc(list.Archetypes, func(a, b wire.Archetype) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("archetypes: got unsorted names, want sorted by name")
	}
	byName := map[string]wire.Archetype{}
	for _, a := range list.Archetypes {
		byName[a.Name] = a
	}
	tests := []struct {
		name      string
		wantPrior string // "" for null
	}{
		{"general-purpose", ""},
		{"financial-transactions", "financial-analyst"},
		{"financial-analyst", "financial-analyst"},
		{"customer-experience", "customer-experience"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := byName[tt.name]
			if !ok {
				t.Fatalf("archetype %s: got none, want it listed", tt.name)
			}
			if tt.wantPrior == "" {
				if a.Prior != nil {
					t.Errorf("prior: got %+v, want null", a.Prior)
				}
				return
			}
			if a.Prior == nil || a.Prior.Name != tt.wantPrior {
				t.Fatalf("prior: got %+v, want %s", a.Prior, tt.wantPrior)
			}
			if len(a.Prior.ActionShares) == 0 || len(a.Prior.OutcomeShares) != 4 || a.Prior.RateMax <= a.Prior.RateMin {
				t.Errorf("prior %s: got %+v, want action shares, four outcome shares and a rate range", tt.wantPrior, a.Prior)
			}
		})
	}
	if !strings.Contains(string(res.body), `"prior":null`) {
		t.Errorf("body: got no \"prior\":null, want one for general-purpose")
	}
}
