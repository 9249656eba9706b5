package admin

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/vigilhq/vigil/admin/wire"
)

// FuzzDecodeDirective checks that no body of POST /v1/control/directives
// fails decoding or validation with anything but a 400 naming what it can.
func FuzzDecodeDirective(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"type":"tighten","target":{"agent_ids":["a"]},"parameters":{"factor":0.5},"duration_seconds":60}`,
		`{"type":"enforce","target":{"team":"t"},"parameters":{"invariants":[{"name":"n","expr":"action.type =="}]}}`,
		`{"type":"re_anchor","target":{"archetype":"financial-analyst"},"parameters":{"term":"Refund"}}`,
		`{"type":"quarantine","target":{"drift_status":"critical"},"duration_seconds":1e400}`,
		`{"type":"release","target":{"agent_ids":[""]},"duration_seconds":-1}`, `{"parameters":{"factor":"x"}}`,
		`{"type":"broadcast_reminder","target":{"team":"t"},"parameters":{"message":"hi","term":"x"}}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/v1/control/directives", bytes.NewReader(body))
		var r wire.DirectiveRequest
		err := decodeBody(req, &r)
		if err == nil {
			issue, ierr := issueRequest(&r, "op")
			err = ierr
			if err == nil {
				if verr := issue.Validate(); verr != nil {
					err = controlError(verr, "")
				}
			}
		}
		if err == nil {
			return
		}
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != 400 {
			t.Fatalf("body %q: got %v, want a 400 *apiError", body, err)
		}
	})
}

func TestDirectiveDuration(t *testing.T) {
	tests := []struct {
		name    string
		secs    *float64
		want    string
		wantErr bool
	}{
		{"absent", nil, "0s", false},
		{"thirty minutes", new(1800.0), "30m0s", false},
		{"a millisecond", new(0.001), "1ms", false},
		{"fractional", new(1.5), "1.5s", false},
		{"zero", new(0.0), "", true},
		{"below a millisecond", new(0.0004), "", true},
		{"negative", new(-1.0), "", true},
		{"too long", new(1e10), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := directiveDuration(tt.secs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error: got %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got.String() != tt.want {
				t.Errorf("duration: got %v, want %s", got, tt.want)
			}
		})
	}
}
