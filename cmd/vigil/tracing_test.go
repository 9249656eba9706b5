package main

import (
	"context"
	"testing"
)

func TestSetupTracing(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool // a provider is built
	}{
		{"nothing set: no tracing", nil, false},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
		{"console exporter", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{"OTLP endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"SDK disabled wins", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v) // autoexport reads the process environment
			}
			tp, shutdown, err := setupTracing(context.Background(), func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			defer shutdown(context.Background())
			if got := tp != nil; got != tc.want {
				t.Errorf("got provider %t, want %t", got, tc.want)
			}
		})
	}
}
