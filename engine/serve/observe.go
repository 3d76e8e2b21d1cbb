package serve

import (
	"context"
	"errors"
	"fmt"
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
// metrics, a span and the audit entry. With metrics and tracing off it
// costs a counter and a context per request.
//
// Its frame is on the stack of every request's goroutine, under the whole
// call: the work before and after the request is done in functions of
// their own, so that it stays small.
func (s *Server) observe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodListen {
			return s.listen(ctx, method, req, next)
		}
		rc := s.drain.begin(ctx)
		defer s.drain.end(rc)
		var o observed
		s.observeBegin(&o, rc, method, req)
		res, err := next(o.ctx, method, req)
		s.observeEnd(&o, method, res, err)
		return res, err
	}
}

// listen serves a subscriptions/listen stream, which parks until its
// client or a shutdown ends it: it is never busy.
func (s *Server) listen(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	defer s.opts.Metrics.StreamOpened("listen")()
	return next(ctx, method, req)
}

// observed is what observe records of one request.
type observed struct {
	ctx     context.Context
	call    *mcp.CallToolRequest // nil: not a tools/call
	tool    string               // call's metrics label
	span    trace.Span           // nil: tracing off
	start   time.Time
	audited *auditCall // nil: not audited
}

func (s *Server) observeBegin(o *observed, ctx context.Context, method string, req mcp.Request) {
	o.ctx = ctx
	if call, ok := req.(*mcp.CallToolRequest); ok {
		o.call, o.tool = call, telemetry.UnknownTool
		if _, ok := s.current.Load().Tool(call.Params.Name); ok {
			o.tool = call.Params.Name
		}
		s.opts.Metrics.CallStarted()
	}
	if s.tracer != nil {
		o.ctx, o.span = s.startSpan(ctx, method, o.tool, req)
	}
	o.start = time.Now()
	o.audited = s.auditBegin(req, o.start)
}

func (s *Server) observeEnd(o *observed, method string, res mcp.Result, err error) {
	outcome := ""
	if o.call != nil {
		outcome = telemetry.OutcomeOK
		r, _ := res.(*mcp.CallToolResult)
		switch {
		case err != nil:
			outcome = telemetry.OutcomeProtocolError
		case r != nil && r.IsError && o.ctx.Err() != nil:
			outcome = telemetry.OutcomeCancelled
			if s.drain.aborted() {
				// The adapter says "cancelled"; tell the model why.
				r.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
					"tool %s was cancelled: the server is shutting down and its grace period ended; call it again", o.call.Params.Name)}}
				r.StructuredContent = nil
			}
		case r != nil && r.IsError:
			outcome = telemetry.OutcomeToolError
		}
	}
	took := time.Since(o.start)
	if s.opts.Metrics != nil {
		if o.call != nil {
			s.opts.Metrics.CallDone(o.tool, outcome, took)
		}
		s.opts.Metrics.RequestDone(method, errorType(outcome, err), took)
	}
	if o.span != nil {
		endSpan(o.span, errorType(outcome, err), err)
	}
	if o.audited != nil {
		s.auditEnd(o.ctx, o.audited, res, err, outcome, took)
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
	if r, ok := req.(*mcp.ReadResourceRequest); ok && r.Params != nil {
		// As the audit log names it: with the config's secrets redacted.
		attrs = append(attrs, attribute.String("mcp.resource.uri", s.current.Load().Redactor().String(r.Params.URI)))
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
