package snapshot

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// adapterSpan starts the span of an adapter's work, a child of the
// request's span, when that one is being recorded: "{adapter} {tool}",
// CLIENT for adapters that call a remote service (http, sql), INTERNAL for
// the others (shell). With tracing off it costs one context lookup.
func (t *Tool) adapterSpan(ctx context.Context) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	kind := trace.SpanKindInternal
	if t.adapterType == "http" || t.adapterType == "sql" {
		kind = trace.SpanKindClient
	}
	return parent.TracerProvider().Tracer("github.com/mcpd/mcpd/engine/snapshot").Start(ctx, t.adapterType+" "+t.Def.Name,
		trace.WithSpanKind(kind),
		trace.WithAttributes(attribute.String("gen_ai.tool.name", t.Def.Name), attribute.String("mcpd.adapter", t.adapterType)))
}

// adapterSpan is the span of a resource read's adapter work, as a tool's
// (Tool.adapterSpan), with the resource's URI.
func (s *source) adapterSpan(ctx context.Context, uri string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	kind := trace.SpanKindInternal
	if s.adapterType == "http" || s.adapterType == "sql" {
		kind = trace.SpanKindClient
	}
	return parent.TracerProvider().Tracer("github.com/mcpd/mcpd/engine/snapshot").Start(ctx, s.adapterType+" "+s.name,
		trace.WithSpanKind(kind),
		trace.WithAttributes(attribute.String("mcp.resource.uri", uri), attribute.String("mcpd.adapter", s.adapterType)))
}

func endAdapterSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		// The message is what the model sees: no secrets, by the adapter
		// contract.
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
