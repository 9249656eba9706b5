package admin

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/vigilhq/vigil/admin/wire"
)

// FuzzDecodeEvaluate checks that no body makes decoding fail with anything
// but a client error.
func FuzzDecodeEvaluate(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `{"agent_id":"a","action":{"type":"read","parameters":{"x":[1,{"y":null}]}}}`,
		`{"agent_id":1}`, `{"action":{"zz":1}}`, `{"context":{"delegation_depth":1e400}}`, `{"a":1} x`,
		`{"action":{"parameters":"s"}}`, `{"AGENT_ID":"a"}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/v1/evaluate", bytes.NewReader(body))
		var r wire.EvaluateRequest
		err := decodeBody(req, &r)
		if err == nil {
			err = validateEvaluate(&r)
		}
		if err == nil {
			return
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			t.Fatalf("decode %q: got %T %v, want an *apiError", body, err, err)
		}
		if ae.Status != 400 {
			t.Fatalf("decode %q: got status %d, want 400", body, ae.Status)
		}
	})
}

func TestDecodeContractFieldPaths(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantField string
	}{
		{"unknown top-level", `{"owner":"x"}`, "owner"},
		{"unknown in a map of structs", `{"time_windows":{"a":{"start_hour":1},"b":{"start_hour":1,"days":2}}}`, "time_windows.b.days"},
		{"type in a map of structs", `{"time_windows":{"a":{"end_hour":true}}}`, "time_windows.a.end_hour"},
		{"type in a list", `{"scope":["read",7]}`, "scope[1]"},
		{"type in a string map", `{"anchors":{"refund":5}}`, "anchors.refund"},
		{"type in limits", `{"limits":{"actions_per_minute":"many"}}`, "limits.actions_per_minute"},
		{"integer overflow", `{"limits":{"max_concurrent":1e30}}`, "limits.max_concurrent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("PUT", "/v1/agents/a", bytes.NewBufferString(tt.body))
			var c wire.Contract
			err := decodeBody(req, &c)
			var ae *apiError
			if !errors.As(err, &ae) {
				t.Fatalf("decode: got %v, want an *apiError", err)
			}
			if got, _ := ae.Details["field"].(string); got != tt.wantField {
				t.Errorf("details.field: got %q, want %q (message %q)", got, tt.wantField, ae.Message)
			}
		})
	}
}
