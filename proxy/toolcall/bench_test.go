package toolcall

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

func BenchmarkParseHTTP(b *testing.B) {
	rules := testRules(b)
	r := Request{Method: "GET", Scheme: "https", Host: "api.example.com", Path: "/v2/customers/42/orders", RawQuery: "status=open&limit=10&cursor=abc"}
	b.ReportAllocs()
	for b.Loop() {
		Parse(r, rules)
	}
}

func BenchmarkParseMCPToolsCall(b *testing.B) {
	rules := testRules(b)
	var args strings.Builder
	for i := 0; args.Len() < 1000; i++ {
		fmt.Fprintf(&args, `"field_%d":"value %d",`, i, i)
	}
	body := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"update_record","arguments":{` + args.String() + `"amount":250}}}`
	r := post("mcp.example.com", "/mcp", body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if c := Parse(r, rules); c.Kind != KindMCP {
			b.Fatal("not MCP")
		}
	}
}

func BenchmarkParsePlainJSON(b *testing.B) {
	rules := testRules(b)
	body := `{"charge":"ch_3","amount":50000,"currency":"usd","metadata":{"reason":"damaged","ticket":881},"lines":[{"sku":"X1","qty":2},{"sku":"X2","qty":1}]}`
	r := post("payments.example.com", "/v1/refunds", body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if c := Parse(r, rules); c.Kind != KindHTTP {
			b.Fatal("not HTTP")
		}
	}
}

func BenchmarkFilterToolsList(b *testing.B) {
	var s strings.Builder
	s.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := range 50 {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `{"name":"tool_%d","description":"does thing %d","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`, i, i)
	}
	s.WriteString(`]}}`)
	body := []byte(s.String())
	allow := func(n string) bool { return n < "tool_3" }
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		FilterToolsList(body, allow)
	}
}

func BenchmarkToolsListFilterSSE(b *testing.B) {
	stream := strings.Repeat("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n", 20) +
		"data: " + listTwo + "\n\n"
	allow := allowOnly("b")
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = io.Copy(io.Discard, NewToolsListFilter(io.NopCloser(strings.NewReader(stream)), allow))
	}
}
