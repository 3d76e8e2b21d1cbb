package snapshot

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/redact"
)

// adapterSpan starts the span of an adapter's work, a child of the
// request's span, when that one is being recorded: "{adapter} {tool}",
// CLIENT with the service's attributes for a handler that calls a remote
// service (adapter.Remote: http, sql), INTERNAL for the others (shell).
// The returned context lets the handler add what only its call knows
// (adapter.Annotate). Every string value goes through the tool's
// redactor, as everything an adapter hands back does. With tracing off it
// costs one context lookup.
func (t *Tool) adapterSpan(ctx context.Context) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	kind := trace.SpanKindInternal
	attrs := []attribute.KeyValue{attribute.String("gen_ai.tool.name", t.Def.Name), attribute.String("mcpd.adapter", t.adapterType)}
	if r, ok := t.handler.(adapter.Remote); ok {
		kind = trace.SpanKindClient
		attrs = spanAttributes(t.redact, attrs, r.RemoteAttributes())
	}
	ctx, span := parent.TracerProvider().Tracer("github.com/mcpd/mcpd/engine/snapshot").Start(ctx, t.adapterType+" "+t.Def.Name,
		trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return adapter.WithAnnotate(ctx, func(a ...adapter.Attribute) { span.SetAttributes(spanAttributes(t.redact, nil, a)...) }), span
}

// spanAttributes appends an adapter's attributes to out as OpenTelemetry's,
// every string through the redactor of the tool or resource (nil: none).
func spanAttributes(r *redact.Redactor, out []attribute.KeyValue, in []adapter.Attribute) []attribute.KeyValue {
	for _, a := range in {
		switch v := a.Value.(type) {
		case string:
			out = append(out, attribute.String(a.Key, r.String(v)))
		case int:
			out = append(out, attribute.Int(a.Key, v))
		case int64:
			out = append(out, attribute.Int64(a.Key, v))
		case bool:
			out = append(out, attribute.Bool(a.Key, v))
		}
	}
	return out
}

// adapterSpan is the span of a resource read's adapter work, as a tool's
// (Tool.adapterSpan), with the resource's URI.
func (s *source) adapterSpan(ctx context.Context, uri string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	kind := trace.SpanKindInternal
	attrs := []attribute.KeyValue{attribute.String("mcp.resource.uri", uri), attribute.String("mcpd.adapter", s.adapterType)}
	if r, ok := s.handler.(adapter.Remote); ok {
		kind = trace.SpanKindClient
		attrs = spanAttributes(s.redact, attrs, r.RemoteAttributes())
	}
	ctx, span := parent.TracerProvider().Tracer("github.com/mcpd/mcpd/engine/snapshot").Start(ctx, s.adapterType+" "+s.name,
		trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return adapter.WithAnnotate(ctx, func(a ...adapter.Attribute) { span.SetAttributes(spanAttributes(s.redact, nil, a)...) }), span
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
