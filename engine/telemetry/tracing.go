package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// NewTracerProvider returns a provider that batches spans to an OTLP/HTTP
// collector. endpoint is the collector's base URL (spans go to
// endpoint/v1/traces); when empty, the exporter reads the standard
// OTEL_EXPORTER_OTLP_* environment variables itself. Shut the provider down
// to flush the last spans.
func NewTracerProvider(ctx context.Context, endpoint, version string) (*sdktrace.TracerProvider, error) {
	var opts []otlptracehttp.Option
	if endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("setting up the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName("mcpd"), semconv.ServiceVersion(version)))
	if err != nil {
		res = resource.Default()
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// MetaCarrier reads and writes W3C trace context in an MCP request's
// params._meta, where MCP clients put traceparent and tracestate.
type MetaCarrier map[string]any

var _ propagation.TextMapCarrier = MetaCarrier(nil)

func (c MetaCarrier) Get(key string) string {
	s, _ := c[key].(string)
	return s
}

func (c MetaCarrier) Set(key, value string) { c[key] = value }

func (c MetaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
