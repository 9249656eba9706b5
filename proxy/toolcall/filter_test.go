package toolcall

import (
	"encoding/json"
	"testing"
)

// allowOnly allows the named tools.
func allowOnly(names ...string) func(string) bool {
	return func(n string) bool {
		for _, m := range names {
			if n == m {
				return true
			}
		}
		return false
	}
}

func allowAll(string) bool { return true }

const toolsListResult = `{"jsonrpc":"2.0","id":2,"result":{"tools":[` +
	`{"name":"read_customer","description":"Read","inputSchema":{"type":"object"}},` +
	`{"name":"refund","inputSchema":{"type":"object","properties":{"amount":{"type":"number"}}},"annotations":{"destructiveHint":true}},` +
	`{"name":"delete_customer","inputSchema":{"type":"object"}}` +
	`],"nextCursor":"c2","_meta":{"k":1}}}`

func TestFilterToolsList(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		allow  func(string) bool
		want   string
		wantOK bool
	}{
		{"drops tools, keeps order, tools and envelope as sent", toolsListResult, allowOnly("refund", "read_customer"),
			`{"jsonrpc":"2.0","id":2,"result":{"tools":[` +
				`{"name":"read_customer","description":"Read","inputSchema":{"type":"object"}},` +
				`{"name":"refund","inputSchema":{"type":"object","properties":{"amount":{"type":"number"}}},"annotations":{"destructiveHint":true}}` +
				`],"nextCursor":"c2","_meta":{"k":1}}}`, true},
		{"drops every tool", toolsListResult, allowOnly(), `{"jsonrpc":"2.0","id":2,"result":{"tools":[],"nextCursor":"c2","_meta":{"k":1}}}`, true},
		{"allow all returns the body", toolsListResult, allowAll, toolsListResult, true},
		{"whitespace kept outside the array", " {\n \"id\" : 1 , \"result\" : { \"tools\" : [ {\"name\":\"a\"} , {\"name\":\"b\"} ] } }\n", allowOnly("b"),
			" {\n \"id\" : 1 , \"result\" : { \"tools\" : [{\"name\":\"b\"}] } }\n", true},
		{"escaped names", `{"result":{"tools":[{"n\u0061me":"\u0061"},{"name":"b"}]}}`, allowOnly("a"), `{"result":{"tools":[{"n\u0061me":"\u0061"}]}}`, true},
		{"tool without a name is asked for as empty", `{"result":{"tools":[{"title":"x"},3,{"name":"a"}]}}`, allowOnly("a"), `{"result":{"tools":[{"name":"a"}]}}`, true},
		{"batch: only tools/list results change", `[{"id":1,"result":{"content":[]}},{"id":2,"result":{"tools":[{"name":"a"},{"name":"b"}]}}]`, allowOnly("b"),
			`[{"id":1,"result":{"content":[]}},{"id":2,"result":{"tools":[{"name":"b"}]}}]`, true},
		{"not a tools/list result", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`, allowOnly(), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`, false},
		{"tools not an array", `{"result":{"tools":{"name":"a"}}}`, allowOnly(), `{"result":{"tools":{"name":"a"}}}`, false},
		{"tools outside result", `{"params":{"tools":[{"name":"a"}]}}`, allowOnly(), `{"params":{"tools":[{"name":"a"}]}}`, false},
		{"an error response", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`, allowOnly(), `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`, false},
		{"invalid JSON", `{"result":{"tools":[{"name":"a"}]}`, allowOnly(), `{"result":{"tools":[{"name":"a"}]}`, false},
		{"trailing data", `{"result":{"tools":[{"name":"a"}]}} x`, allowOnly(), `{"result":{"tools":[{"name":"a"}]}} x`, false},
		{"empty", ``, allowOnly(), ``, false},
		{"a string", `"tools"`, allowOnly(), `"tools"`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FilterToolsList([]byte(tc.body), tc.allow)
			if string(got) != tc.want || ok != tc.wantOK {
				t.Errorf("got %s, %v\nwant %s, %v", got, ok, tc.want, tc.wantOK)
			}
			if json.Valid([]byte(tc.body)) && !json.Valid(got) {
				t.Errorf("got invalid JSON %s", got)
			}
		})
	}
}
