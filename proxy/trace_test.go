package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigilhq/vigil/proxy"
)

func TestSpansAndPropagatedTraceContext(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantName   string
		wantTool   string
		wantVerd   string
		wantParent bool // the agent sent a traceparent
	}{
		{"plain HTTP call", http.MethodGet, "/docs", "", "GET 127.0.0.1", "read", "ALLOW", false},
		{"MCP tool call, joining the agent's trace", http.MethodPost, "/mcp",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_docs","arguments":{"q":"x"}}}`,
			"execute_tool search_docs", "search_docs", "ALLOW", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			defer tp.Shutdown(context.Background())
			s := botSetup()
			s.configure = func(o *proxy.Options) { o.TracerProvider = tp }
			h := newHarness(t, s)
			var gotTraceparent string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotTraceparent = r.Header.Get("Traceparent")
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
			}))
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, stringsReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			var agentSpan trace.SpanContext
			if tc.wantParent {
				agentSpan = trace.NewSpanContext(trace.SpanContextConfig{
					TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
					SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled})
				propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), agentSpan), propagation.HeaderCarrier(req.Header))
			}
			resp, err := h.client("bot", "s3cret").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = readAll(resp)
			waitFor(t, "the call's span to end", func() bool { return len(rec.Ended()) == 2 })
			spans := rec.Ended()
			var call, eval sdktrace.ReadOnlySpan
			for _, s := range spans {
				if s.Name() == "vigil.governance.evaluate" {
					eval = s
				} else {
					call = s
				}
			}
			if call == nil || eval == nil {
				t.Fatalf("spans: got %v, want the call's and the evaluation's", names(spans))
			}
			if call.Name() != tc.wantName {
				t.Errorf("span name: got %q, want %q", call.Name(), tc.wantName)
			}
			if eval.Parent().SpanID() != call.SpanContext().SpanID() {
				t.Errorf("the evaluation span is not a child of the call's")
			}
			attrs := map[attribute.Key]attribute.Value{}
			for _, kv := range call.Attributes() {
				attrs[kv.Key] = kv.Value
			}
			for k, want := range map[attribute.Key]string{"gen_ai.agent.id": "bot", "gen_ai.tool.name": tc.wantTool, "vigil.verdict": tc.wantVerd} {
				if got := attrs[k].AsString(); got != want {
					t.Errorf("attribute %s: got %q, want %q", k, got, want)
				}
			}
			if got := attrs["vigil.ledger.sequence"].AsInt64(); got != 1 {
				t.Errorf("vigil.ledger.sequence: got %d, want 1", got)
			}
			if _, ok := attrs["vigil.ucs"]; !ok {
				t.Errorf("vigil.ucs missing")
			}
			if _, ok := attrs["vigil.tier"]; !ok {
				t.Errorf("vigil.tier missing")
			}
			// The upstream saw the call's span as its parent.
			got := propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier{"Traceparent": []string{gotTraceparent}})
			sc := trace.SpanContextFromContext(got)
			if sc.SpanID() != call.SpanContext().SpanID() || sc.TraceID() != call.SpanContext().TraceID() {
				t.Errorf("forwarded traceparent %q does not name the call's span %s", gotTraceparent, call.SpanContext().SpanID())
			}
			if tc.wantParent {
				if call.SpanContext().TraceID() != agentSpan.TraceID() || call.Parent().SpanID() != agentSpan.SpanID() {
					t.Errorf("the call's span does not join the agent's trace")
				}
			}
		})
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}
