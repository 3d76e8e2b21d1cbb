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

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/cache"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/telemetry"
)

const methodListen = "subscriptions/listen"

// observe is the outermost middleware: it counts every request as busy for
// the drain, binds its context to the shutdown's grace period, and builds
// the request's event.Call, once, which metrics, the span, the audit log
// and Options.OnCall (the console) are all told of. With metrics and
// tracing off it costs a counter and a context per request.
//
// It is the one place a call is recorded: the handlers below only note the
// tool they found (noteTool), so that it is looked up once.
//
// Its frame is on the stack of every request's goroutine, under the whole
// call: the work before and after the request is done in functions of
// their own, so that it stays small.
func (s *Server) observe(next mcp.MethodHandler, toolset string) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodListen {
			return s.listen(ctx, method, req, next)
		}
		rc := s.drain.begin(ctx)
		defer s.drain.end(rc)
		o := &rc.obs
		ctx = s.observeBegin(o, rc, method, req, toolset)
		res, err := next(ctx, method, req)
		s.observeEnd(o, ctx, res, err)
		return res, err
	}
}

// listen serves a subscriptions/listen stream, which parks until its
// client or a shutdown ends it: it is never busy.
func (s *Server) listen(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	defer s.opts.Metrics.StreamOpened("listen")()
	return next(ctx, method, req)
}

// observed is what observe records of one request. It lives in the
// request's reqCtx, which is made for every request anyway: the event
// costs no allocation of its own, and the handlers reach it through their
// context (observedOf).
type observed struct {
	ev    event.Call
	span  trace.Span // nil: tracing off
	label string     // the tool's metrics label, once known (see toolLabel)
}

// observedKey is the context key of the request's *observed.
type observedKey struct{}

// observedOf returns the observed of the request whose context is ctx; nil
// without observe (a benchmark's bare server).
func observedOf(ctx context.Context) *observed {
	o, _ := ctx.Value(observedKey{}).(*observed)
	return o
}

// RecordDelegation notes the identity the call's adapter presented to
// its backend (adapter.RecordDelegation), for the audit log and the span.
// The adapter runs in the request's goroutine, before observeEnd reads it.
func (o *observed) RecordDelegation(d adapter.Delegation) { o.ev.Delegation = d }

// noteTool tells the request's event which tool runs, as the handler found
// it with the caller's scopes.
func noteTool(ctx context.Context, t *snapshot.Tool) {
	if o := observedOf(ctx); o != nil {
		o.ev.Tool = t
	}
}

// callerFor is the verified caller of req: the one observe decoded, or,
// without observe, decoded now.
func callerFor(ctx context.Context, req mcp.Request) *principal.Principal {
	if o := observedOf(ctx); o != nil {
		return o.ev.Caller
	}
	return callerOf(req)
}

func (s *Server) observeBegin(o *observed, rc *reqCtx, method string, req mcp.Request, toolset string) context.Context {
	ev := &o.ev
	ev.Method, ev.Request = method, req
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil {
			ev.Kind, ev.Name = event.KindTool, r.Params.Name
			s.opts.Metrics.CallStarted()
		}
	case *mcp.ReadResourceRequest:
		if r.Params != nil {
			ev.Kind, ev.Name = event.KindResource, r.Params.URI
		}
	case *mcp.GetPromptRequest:
		if r.Params != nil {
			ev.Kind, ev.Name = event.KindPrompt, r.Params.Name
		}
	}
	ev.Caller = callerOf(req)
	ev.Snapshot = s.current.Load()
	ev.Toolset = ToolsetServed(ev.Snapshot, toolset)
	var ctx context.Context = rc
	if s.tracer != nil {
		// A span is named when it starts (naming it at the end would
		// cost an allocation per call), so with tracing on the tool's
		// label is looked up now rather than taken from the handler.
		if ev.Kind == event.KindTool {
			o.label = toolLabel(ev)
		}
		ctx, o.span = s.startSpan(rc, o, req)
	}
	ev.Time = time.Now()
	return ctx
}

func (s *Server) observeEnd(o *observed, ctx context.Context, res mcp.Result, err error) {
	ev := &o.ev
	ev.Duration = time.Since(ev.Time)
	ev.Result, ev.Err = res, err
	tr, _ := res.(*mcp.CallToolResult)
	_, ev.InputRequired = res.(*inputRequired)
	if tr != nil {
		ev.Cache = cache.Status(tr)
	}
	if ev.Kind != "" {
		isError := tr != nil && tr.IsError
		// The context is asked only when the outcome depends on it.
		ev.Outcome = event.Outcome(ev.Kind, isError, err, (err != nil || isError) && ctx.Err() != nil)
		if ev.Outcome == event.OutcomeCancelled && tr != nil && s.drain.aborted() {
			// The adapter says "cancelled"; tell the model why.
			tr.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
				"tool %s was cancelled: the server is shutting down and its grace period ended; call it again", ev.Name)}}
			tr.StructuredContent = nil
		}
	}
	if s.opts.Metrics != nil {
		if ev.Kind == event.KindTool {
			if o.label == "" {
				o.label = toolLabel(ev)
			}
			s.opts.Metrics.CallDone(o.label, ev.Outcome, ev.Duration)
			if ev.Cache != "" {
				s.opts.Metrics.CacheLookup(o.label, ev.Cache)
			}
		}
		if ev.Kind != "" && ev.Toolset != "" {
			s.opts.Metrics.ToolsetCallDone(ev.Toolset, ev.Kind, ev.Outcome)
		}
		s.opts.Metrics.RequestDone(ev.Method, errorType(ev.Outcome, err), ev.Duration)
	}
	if o.span != nil {
		if d := ev.Delegation; d.Mode != "" {
			o.span.SetAttributes(delegationAttributes(d)...)
		}
		endSpan(o.span, errorType(ev.Outcome, err), err)
	}
	if ev.Kind != "" && (s.opts.Audit != nil || s.opts.OnCall != nil) {
		s.detail(ev, tr)
		s.opts.Audit.ObserveCall(ev)
		if s.opts.OnCall != nil {
			s.opts.OnCall(ev)
		}
	}
	// Let go of the request, its result and its snapshot: the context
	// may outlive the request.
	*o = observed{}
}

// toolLabel is the metrics label of a tools/call: the tool's name when the
// config declares it (whether or not the caller could see it), else
// telemetry.UnknownTool, so that no request can add a series.
func toolLabel(ev *event.Call) string {
	if ev.Tool != nil {
		return ev.Name
	}
	if _, ok := ev.Snapshot.Tool(ev.Name); ok {
		return ev.Name
	}
	return telemetry.UnknownTool
}

// detail fills in what the audit log and the console show of a call.
func (s *Server) detail(ev *event.Call, tr *mcp.CallToolResult) {
	d := &ev.Detail
	d.Principal, d.AuthMethod, d.Transport = event.LocalPrincipal, "none", "stdio"
	if ev.Caller != nil {
		d.Principal, d.AuthMethod = ev.Caller.Name, ev.Caller.Method
	}
	req := ev.Request
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		d.Transport = "http"
		d.Protocol = extra.Header.Get("Mcp-Protocol-Version")
	}
	modern := false
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		d.SessionID = ss.ID()
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
			d.Protocol = ip.ProtocolVersion
			modern = ip.ProtocolVersion >= protocol2026
		}
	} else if ok {
		// The stateless fast path: 2026-07-28, as its header said.
		d.Protocol, modern = protocol2026, true
	}
	d.Client = clientLabel(req)
	if s.opts.Generation != nil {
		d.Generation = s.opts.Generation()
	}
	red := ev.Snapshot.Redactor()
	d.Target = red.String(ev.Name)
	if ev.Err != nil {
		d.Error = ev.Err.Error()
	} else if tr != nil && tr.IsError {
		d.Error = event.ResultText(tr)
	}
	if d.Error != "" {
		// Tool errors are redacted by the snapshot already; protocol
		// errors (a template variable echoed back) may not be.
		d.Error = event.Truncate(red.String(d.Error), event.MaxError)
	}
	if s.opts.Audit != nil && ev.Err == nil && ev.Result != nil {
		// markCall gave the results of 2026 sessions resultType
		// "complete".
		d.ResultBytes = event.Size(ev.Result, modern)
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
	case event.OutcomeToolError:
		return "tool_error"
	case event.OutcomeCancelled:
		return "cancelled"
	}
	return ""
}

// startSpan starts the SERVER span of one MCP request, named
// "{mcp.method.name} {target}", parented on the W3C trace context in the
// request's params._meta when the client sent one.
func (s *Server) startSpan(ctx context.Context, o *observed, req mcp.Request) (context.Context, trace.Span) {
	if meta := paramsMeta(req); meta != nil {
		ctx = propagation.TraceContext{}.Extract(ctx, telemetry.MetaCarrier(meta))
	}
	ev := &o.ev
	name := ev.Method
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", ev.Method)}
	switch ev.Kind {
	case event.KindTool:
		if o.label != telemetry.UnknownTool {
			name += " " + o.label
			attrs = append(attrs, attribute.String("gen_ai.tool.name", o.label), attribute.String("gen_ai.operation.name", "execute_tool"))
		}
	case event.KindPrompt:
		if _, found := ev.Snapshot.Prompt(ev.Name); found {
			name += " " + ev.Name
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", ev.Name))
		}
	}
	if ev.Caller != nil {
		// The verified caller, as the audit log names it (a name or a
		// token's subject, never a credential).
		attrs = append(attrs, attribute.String("enduser.id", ev.Caller.Name))
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
	} else if ok {
		attrs = append(attrs, attribute.String("mcp.protocol.version", protocol2026)) // the fast path
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

// delegationAttributes are the span attributes of the identity a call
// presented to its backend: how it was obtained, whom it names, and who
// acts for them (an exchanged token's act claim).
func delegationAttributes(d adapter.Delegation) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("mcpd.identity.mode", d.Mode), attribute.String("mcpd.identity.subject", d.Subject)}
	if d.Actor != "" {
		attrs = append(attrs, attribute.String("mcpd.identity.actor", d.Actor))
	}
	return attrs
}
