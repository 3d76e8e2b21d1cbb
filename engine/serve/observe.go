package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpd/mcpd/engine/telemetry"
)

const methodListen = "subscriptions/listen"

// observe is the outermost middleware: it counts every request as busy for
// the drain, binds its context to the shutdown's grace period, and records
// metrics and a span. With metrics and tracing off it costs a counter and a
// context per request.
func (s *Server) observe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodListen {
			// A listen stream parks until its client or a shutdown ends it:
			// it is never busy.
			defer s.opts.Metrics.StreamOpened("listen")()
			return next(ctx, method, req)
		}
		ctx, id, cancel := s.drain.begin(ctx)
		defer s.drain.end(id, cancel)

		call, isCall := req.(*mcp.CallToolRequest)
		tool := ""
		if isCall {
			tool = telemetry.UnknownTool
			if _, ok := s.current.Load().Tool(call.Params.Name); ok {
				tool = call.Params.Name
			}
			s.opts.Metrics.CallStarted()
		}
		var span trace.Span
		if s.tracer != nil {
			ctx, span = s.startSpan(ctx, method, tool, req)
		}
		start := time.Now()
		audited := s.auditBegin(req, start)

		res, err := next(ctx, method, req)

		outcome := ""
		if isCall {
			outcome = telemetry.OutcomeOK
			r, _ := res.(*mcp.CallToolResult)
			switch {
			case err != nil:
				outcome = telemetry.OutcomeProtocolError
			case r != nil && r.IsError && ctx.Err() != nil:
				outcome = telemetry.OutcomeCancelled
				if s.drain.aborted() {
					// The adapter says "cancelled"; tell the model why.
					r.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
						"tool %s was cancelled: the server is shutting down and its grace period ended; call it again", call.Params.Name)}}
					r.StructuredContent = nil
				}
			case r != nil && r.IsError:
				outcome = telemetry.OutcomeToolError
			}
		}
		took := time.Since(start)
		if s.opts.Metrics != nil {
			if isCall {
				s.opts.Metrics.CallDone(tool, outcome, took)
			}
			s.opts.Metrics.RequestDone(method, errorType(outcome, err), took)
		}
		if span != nil {
			endSpan(span, errorType(outcome, err), err)
		}
		if audited != nil {
			s.auditEnd(ctx, audited, res, err, outcome, took)
		}
		return res, err
	}
}

// errorType is the error.type of a request: the JSON-RPC error code, or
// tool_error for a tool result with isError, as the MCP conventions say;
// empty on success.
func errorType(outcome string, err error) string {
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return fmt.Sprint(je.Code)
		}
		if errors.Is(err, context.Canceled) {
			return "cancelled"
		}
		return "_OTHER"
	}
	switch outcome {
	case telemetry.OutcomeToolError:
		return "tool_error"
	case telemetry.OutcomeCancelled:
		return "cancelled"
	}
	return ""
}

// startSpan starts the SERVER span of one MCP request, named
// "{mcp.method.name} {target}", parented on the W3C trace context in the
// request's params._meta when the client sent one.
func (s *Server) startSpan(ctx context.Context, method, tool string, req mcp.Request) (context.Context, trace.Span) {
	if meta := paramsMeta(req); meta != nil {
		ctx = propagation.TraceContext{}.Extract(ctx, telemetry.MetaCarrier(meta))
	}
	name := method
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	if tool != "" && tool != telemetry.UnknownTool {
		name += " " + tool
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	if p, ok := req.(*mcp.GetPromptRequest); ok && p.Params != nil {
		if _, found := s.current.Load().Prompt(p.Params.Name); found {
			name += " " + p.Params.Name
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", p.Params.Name))
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if id := ss.ID(); id != "" {
			attrs = append(attrs, attribute.String("mcp.session.id", id))
		}
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", ip.ProtocolVersion))
		}
	}
	return s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

func endSpan(span trace.Span, errType string, err error) {
	if errType != "" {
		span.SetAttributes(attribute.String("error.type", errType))
		msg := errType
		if err != nil {
			msg = err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// paramsMeta returns a request's params._meta. The params of some requests
// are optional and may be a nil pointer, whose GetMeta panics.
func paramsMeta(req mcp.Request) (meta map[string]any) {
	defer func() {
		if recover() != nil {
			meta = nil
		}
	}()
	if p := req.GetParams(); p != nil {
		return p.GetMeta()
	}
	return nil
}

// countHTTP counts each POST (a request, or a batch of them) as busy while
// it is served, so that a drain waits for its answer to be written, and
// each GET (a 2025 session's notification stream) as an open stream.
// A 2026 subscriptions/listen POST is a stream, counted by observe.
func (s *Server) countHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			defer s.opts.Metrics.StreamOpened("get")()
		case r.Method == http.MethodPost && r.Header.Get("Mcp-Method") != methodListen:
			s.drain.add(1)
			defer s.drain.add(-1)
		}
		next.ServeHTTP(w, r)
	})
}
