package main

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// setupTracing builds the OpenTelemetry tracer provider from the standard
// OTEL_* variables. Tracing is on when an exporter is chosen
// (OTEL_TRACES_EXPORTER other than "none") or an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and
// OTEL_SDK_DISABLED is not "true"; otherwise the returned provider is nil
// (no tracing, no cost). The exporter, its endpoint and protocol, the
// sampler (OTEL_TRACES_SAMPLER), the batch processor (OTEL_BSP_*) and the
// resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES; service.name
// defaults to "vigil") are the SDK's, read from the environment.
// shutdown flushes and stops the provider.
func setupTracing(ctx context.Context, getenv func(string) string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if getenv == nil || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, noop, nil
	}
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	endpoint := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	if exporter == "none" || (exporter == "" && !endpoint) {
		return nil, noop, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, noop, fmt.Errorf("tracing: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("vigil"), semconv.ServiceVersion(version)),
		resource.Environment(),
	)
	if err != nil {
		return nil, noop, fmt.Errorf("tracing: resource: %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return sdk, sdk.Shutdown, nil
}
