// Package serve is the MCP side of mcpd: one SDK server whose list, call,
// read and get methods answer from the current snapshot, served over stdio
// and Streamable HTTP in both protocol eras.
//
// mcpd owns its tool set. The SDK's own registries are bypassed by a
// receiving middleware that answers from snapshot.Current, so a reload is one
// pointer swap that every request sees at once, and Notify sends exactly one
// list_changed per kind to every client.
package serve

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"time"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/resultbuf"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/tasks"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// Options configure a Server.
type Options struct {
	// ListTTL is the ttlMs clients of the 2026 protocol may cache list and
	// read results for. Clients that listen for list_changed hear of a
	// reload at once; the TTL bounds how stale a client that does not can be.
	ListTTL time.Duration
	// PageSize is the largest page a list method returns.
	PageSize int
	// Logger receives the SDK's and mcpd's serving logs.
	Logger *slog.Logger
	// SlowClientTimeout is how long a write of a notification to an HTTP
	// client's event stream may block before the client is taken to have
	// stopped reading and its session is closed (see notify.go). Default
	// DefaultSlowClientTimeout (10s).
	SlowClientTimeout time.Duration
	// Metrics, when not nil, records calls, requests and streams.
	Metrics *telemetry.Metrics
	// Tracer, when not nil, gets a span per request and per adapter call.
	Tracer trace.Tracer
	// ShutdownDelay is how long Shutdown keeps accepting HTTP connections
	// while readiness fails, so that load balancers stop sending first (0:
	// none). ShutdownGrace is how long a drain waits for the requests in
	// flight before cancelling them (default 25s); AnswerWait is how long
	// it then waits for their answers to be written (default 5s). A stdio
	// session whose input ends drains too (see Shutdown).
	ShutdownDelay, ShutdownGrace, AnswerWait time.Duration
	// Audit, when not nil, gets one entry per tools/call, resources/read
	// and prompts/get; Generation, when not nil, tells the config
	// generation for its entries.
	Audit      *audit.Logger
	Generation func() int
	// OnCall, when not nil, hears of every tools/call, resources/read and
	// prompts/get once answered, as the audit log does (see observe.go):
	// the console. It runs on the request's goroutine, so it must return
	// at once, and the event is valid only until it returns. Nil costs a
	// call nothing.
	OnCall func(*event.Call)

	// bare leaves out the observe middleware, for benchmarking its cost.
	bare bool
	// MaxInflight caps the tool calls and resource reads running at once,
	// over every transport; past it a request gets a JSON-RPC error. 0: no
	// cap. (HTTPOptions.MaxInflight refuses HTTP requests earlier, with
	// 503; this cap also counts calls whose HTTP client has gone, which
	// the SDK lets run on in a 2025-11-25 session.)
	MaxInflight int
	// OutputBudget bounds the output caps of the calls in flight, summed
	// (see budget.go); 0: no bound. OutputBudgetWait is how long a call
	// waits for budget before it is refused (default 5s).
	OutputBudget     int64
	OutputBudgetWait time.Duration
	// Streams bound the long-lived streams (legacy GET, subscriptions/listen,
	// and those LimitStreams guards) per caller and in total; see
	// streams.go. The zero value bounds nothing.
	Streams StreamLimits
	// Tasks runs the calls of tools with a task block as tasks (tasks.go);
	// nil: a manager of its own, on the shared state when the config has
	// a state block, in memory otherwise. Shutdown shuts it down.
	Tasks *tasks.Manager
}

// Server serves the current snapshot over MCP.
type Server struct {
	// logLevels are the levels sessions set with logging/setLevel (see
	// toolLog), by a weak pointer to the session: an entry goes when its
	// session is collected.
	logLevels sync.Map
	current   *snapshot.Current
	mcp       *mcp.Server
	opts      Options
	notes     *notifier
	subs      *subscriptions // resources/subscribe (subscribe.go)
	drain     *drain
	shut      shutdown
	streams   *streamGate
	tracer    trace.Tracer         // nil: tracing off
	sdkLogger *slog.Logger         // opts.Logger with the SDK's info lines at debug
	running   chan struct{}        // a slot per call or read running; nil: no cap
	parked    chan struct{}        // a slot per call parked on its user (park.go); nil: no cap
	posts     postSlots            // the HTTP request slots of 2025-11-25 POSTs (park.go)
	budget    *budget              // Options.OutputBudget; nil: no bound
	sealer    *requeststate.Sealer // signs requestState when the config sets no key
	results   *resultbuf.Pool      // lent to large results on the fast path (fastpath.go)

	epMu sync.Mutex           // guards eps and each endpoint's announced
	eps  map[string]*endpoint // by toolset; "" is /mcp (see toolset.go)
	// caps are the capabilities every endpoint's SDK server is given, kept
	// for the fast path's server/discover.
	caps *mcp.ServerCapabilities
	// tasks runs tools as tasks (tasks.go).
	tasks *tasks.Manager
	// ltasks routes the status notifications of 2025-11-25's tasks
	// (tasks_legacy.go).
	ltasks    legacyTasks
	taskShare taskShare // the slots tasks may hold (tasklimits.go)
}

// The SDK fans list_changed out to every legacy session and every modern
// subscriptions/listen stream only when one of its registries changes, and
// offers no other way in. Re-registering one hidden marker entry per kind is
// the single call that triggers exactly one such notification; the markers
// are never listed or callable, since the middleware answers those methods.
const marker = "mcpd.internal.list-changed"

var markerSchema = map[string]any{"type": "object"}

// New returns a server for the snapshots held by current, which must hold
// one already.
func New(current *snapshot.Current, opts Options) *Server {
	if opts.PageSize <= 0 {
		opts.PageSize = 1000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 25 * time.Second
	}
	if opts.AnswerWait <= 0 {
		opts.AnswerWait = 5 * time.Second
	}
	s := &Server{current: current, opts: opts, drain: newDrain(), tracer: opts.Tracer, sdkLogger: slog.New(demoteInfo(opts.Logger.Handler()))}
	s.sealer = requeststate.MustRandomSealer()
	s.results = resultbuf.NewPool()
	s.streams = newStreamGate(opts.Streams)
	if opts.MaxInflight > 0 {
		s.running = make(chan struct{}, opts.MaxInflight)
		s.parked = make(chan struct{}, opts.MaxInflight)
	}
	s.budget = newBudget(opts.OutputBudget, opts.MaxInflight)
	s.notes = newNotifier(opts.Logger, opts.SlowClientTimeout)
	s.notes.sessions = s.allSessions
	s.subs = newSubscriptions()
	s.notes.muted = s.subs.muted
	// Advertise list_changed from the start, even for a config with no
	// tools yet: a reload may add some.
	s.caps = &mcp.ServerCapabilities{
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Completions: &mcp.CompletionCapabilities{},
		Logging:     &mcp.LoggingCapabilities{},
		Extensions:  map[string]any{tasksExtension: map[string]any{}},
	}
	s.tasks = opts.Tasks
	if s.tasks == nil {
		s.tasks = s.newTaskManager()
	}
	s.eps = map[string]*endpoint{}
	s.mcp = s.endpoint("").srv
	return s
}

// newSDK returns the SDK server of one endpoint: /mcp (toolset "") or a
// toolset's, with the implementation and instructions it was given (which
// the fast path's answers carry). Every endpoint answers from the same
// snapshot through the same middleware; only what it shows differs.
func (s *Server) newSDK(toolset string) (*mcp.Server, *mcp.Implementation, string) {
	info := s.current.Load().Server
	impl := info.Implementation()
	srv := mcp.NewServer(impl, &mcp.ServerOptions{
		Instructions: info.Instructions,
		Logger:       s.sdkLogger,
		PageSize:     s.opts.PageSize,
		Capabilities: s.caps,
		CompletionHandler: func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return s.complete(ctx, req, toolset)
		},
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return s.subscribe(ctx, req, toolset)
		},
		UnsubscribeHandler: s.unsubscribe,
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = int(s.opts.ListTTL / time.Millisecond)
		},
	})
	// Register the markers while no session exists: nothing is sent.
	touchMarkers(srv, [3]bool{true, true, true})
	srv.AddReceivingMiddleware(s.legacyHook) // the sessions fastlegacy.go may serve
	s.addTaskMethods(srv)
	s.addLegacyTaskMethods(srv)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler { return s.middleware(next, toolset) })
	srv.AddReceivingMiddleware(s.legacyTaskMiddleware)
	srv.AddReceivingMiddleware(s.notes.listens.receiving(srv))
	srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		s.notes.listens.setBase(srv, next)
		return s.notes.sending(next)
	})
	// Added last, so outermost: it sees every request first.
	if !s.opts.bare {
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler { return s.observe(next, toolset) })
	}
	return srv, impl, info.Instructions
}

// SDK returns the underlying SDK server.
func (s *Server) SDK() *mcp.Server { return s.mcp }

// Notify sends one list_changed notification per kind that changed to every
// connected client: the stdio client, every legacy HTTP session and every
// modern subscriptions/listen stream that asked for it. It returns at once:
// the notifications are written in the background, and a client that does
// not read them holds up no one else (see notify.go).
//
// With toolsets, each endpoint's clients hear only of the lists it shows
// that changed (see toolset.go): the kinds given are what changed in the
// whole config, and what /mcp serving everything announces.
func (s *Server) Notify(tools, prompts, resources bool) {
	s.notifyEndpoints([3]bool{tools, prompts, resources})
}

// touchMarkers re-registers the marker of each kind, which makes the SDK
// send one list_changed of that kind to every session.
func touchMarkers(srv *mcp.Server, kinds [3]bool) {
	if kinds[0] {
		srv.AddTool(&mcp.Tool{Name: marker, InputSchema: markerSchema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("not callable")
		})
	}
	if kinds[1] {
		srv.AddPrompt(&mcp.Prompt{Name: marker}, nil)
	}
	if kinds[2] {
		srv.AddResource(&mcp.Resource{URI: "mcpd-internal:list-changed", Name: marker}, nil)
	}
}

// ResourceUpdated tells clients subscribed to uri that its contents changed.
// Like Notify, it returns at once; ctx is not needed past the call.
func (s *Server) ResourceUpdated(_ context.Context, uri string) {
	s.resourceUpdated(uri)
}

// RunStdio serves one client on stdin/stdout until stdin closes, Shutdown
// is called or ctx ends. In the first two cases the requests already read
// are drained first (see drainTransport), and RunStdio returns at most
// AnswerWait after the drain, with an error if a call still runs then (its
// program, say, ignores cancellation); cancelling ctx ends the session at
// once.
func (s *Server) RunStdio(ctx context.Context) error { return s.RunStdioToolset(ctx, "") }

func (s *Server) runStdio(ctx context.Context, srv *mcp.Server) error {
	errc := make(chan error, 1)
	go func() {
		errc <- srv.Run(ctx, &drainTransport{inner: &taskTransport{inner: stdioTransport(), s: s}, s: s})
	}()
	select {
	case err := <-errc:
		return err
	case <-s.drain.done:
	}
	t := time.NewTimer(s.opts.AnswerWait)
	defer t.Stop()
	select {
	case err := <-errc:
		return err
	case <-t.C:
		return errors.New("the stdio session did not end: a call is still running")
	}
}

// SessionCount is the number of sessions open.
func (s *Server) SessionCount() int {
	n := 0
	for range s.allSessions() {
		n++
	}
	return n
}

func (s *Server) middleware(next mcp.MethodHandler, toolset string) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		// The verified caller, if the transport authenticated one: what it
		// may see and call is decided here and below (snapshot, adapters,
		// audit), which read it from ctx.
		caller := callerFor(ctx, req)
		if caller != nil {
			ctx = principal.NewContext(ctx, caller)
		}
		// tools/call first and apart: this frame is under the whole call
		// (see observe), the other methods' cases would make it larger.
		if r, ok := req.(*mcp.CallToolRequest); ok {
			if !s.acquire() {
				return nil, s.busy()
			}
			hold := callHold{running: s.running != nil}
			defer s.endCall(&hold)
			return s.callTool(ctx, r, caller, toolset, &hold)
		}
		return s.otherMethod(ctx, method, req, caller, next, toolset)
	}
}

// otherMethod is middleware for every method but tools/call.
func (s *Server) otherMethod(ctx context.Context, method string, req mcp.Request, caller *principal.Principal, next mcp.MethodHandler, toolset string) (mcp.Result, error) {
	switch r := req.(type) {
	case *mcp.ListToolsRequest:
		return eraResult(r.Session)(s.listTools(r, caller, toolset))
	case *mcp.ListPromptsRequest:
		return eraResult(r.Session)(s.listPrompts(r, caller, toolset))
	case *mcp.GetPromptRequest:
		return s.getPrompt(ctx, r, caller, toolset)
	case *mcp.ListResourcesRequest:
		return eraResult(r.Session)(s.listResources(r, caller, toolset))
	case *mcp.ListResourceTemplatesRequest:
		return eraResult(r.Session)(s.listTemplates(r, caller, toolset))
	case *mcp.ReadResourceRequest:
		if !s.acquire() {
			return nil, s.busy()
		}
		defer s.release()
		return eraResult(r.Session)(s.readResource(ctx, r, toolset))
	case *mcp.ServerRequest[*mcp.SetLoggingLevelParams]:
		res, err := next(ctx, method, req)
		if err == nil && r.Session != nil && r.Params != nil {
			s.setLogLevel(r.Session, r.Params.Level)
		}
		return res, err
	case *mcp.InitializeRequest:
		res, err := next(ctx, method, req)
		if ir, ok := res.(*mcp.InitializeResult); ok && err == nil {
			info := s.current.Load().Server
			ir.ServerInfo = info.Implementation()
			ir.Instructions = info.Instructions
		}
		return res, err
	}
	return next(ctx, method, req)
}

// callerOf returns the principal the HTTP auth layer verified for req, nil
// for the local user (stdio, or HTTP with authentication off).
func callerOf(req mcp.Request) *principal.Principal {
	extra := req.GetExtra()
	if extra == nil {
		return nil
	}
	return principal.FromTokenInfo(extra.TokenInfo)
}

func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest, caller *principal.Principal, toolset string, hold *callHold) (mcp.Result, error) {
	snap := s.current.Acquire()
	defer snap.Release()
	// A tool the caller lacks the scopes for, or that the endpoint's
	// toolset does not hold, is refused exactly as an unknown one, so that
	// its existence does not leak.
	_, ts, usable := viewFor(snap, toolset, caller)
	t, ok := snap.ToolFor(req.Params.Name, caller)
	if !ok || !usable || !ts.HasTool(req.Params.Name) {
		return nil, unknownTool(req.Params.Name)
	}
	noteTool(ctx, t)
	if res, err, ok := s.callAsTask(ctx, t, req, caller, hold); ok {
		return res, err
	}
	reserved, refused := s.reserveOutput(ctx, t)
	if refused != nil {
		return markCall(req.Session, refused), nil
	}
	hold.reserved = reserved
	defer func() { s.releaseOutput(req, hold.reserved) }()
	cr := snapshot.CallRequest{Args: req.Params.Arguments, Caller: caller, Progress: s.progress(ctx, req), Log: s.toolLog(ctx, req)}
	if t.Asks() { // an adapter that may answer with its backend's task (tasks_relay.go)
		cr.Tasks = clientUsesTasks(req)
	}
	var res *mcp.CallToolResult
	var err error
	if t.Asks() {
		res, err = s.callAsking(ctx, t, snap, req, &cr, hold)
	} else {
		res, err = t.Call(ctx, &cr)
	}
	if err != nil {
		return callFailed(req.Session, err)
	}
	if cr.Task != nil {
		return s.followTask(ctx, t, req, caller, cr.Task)
	}
	if res.InputRequests != nil {
		return newInputRequired(res.InputRequests, res.RequestState), nil
	}
	if t.BuildsResult() {
		var refused *mcp.CallToolResult
		if hold.reserved, refused = s.chargeResult(ctx, t, res, hold.reserved); refused != nil {
			return markCall(req.Session, refused), nil
		}
	}
	out := markCall(req.Session, res)
	resultbuf.From(ctx).Pass(res, out) // the buffers res was built in go with it
	return out, nil
}

// callAsking is t.Call for a tool that asks its user: in a 2025-11-25
// session, the call gives back what hold holds while it waits for the
// answers (park.go). The hold it parks is a copy on the heap, which the
// session's answerer keeps, so that calls of other tools keep theirs on
// the stack.
func (s *Server) callAsking(ctx context.Context, t *snapshot.Tool, snap *snapshot.Snapshot, req *mcp.CallToolRequest, cr *snapshot.CallRequest, hold *callHold) (*mcp.CallToolResult, error) {
	h := &callHold{running: hold.running, reserved: hold.reserved}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		h.post = headerKey(extra.Header)
	}
	cr.Answers = s.answers(snap, req.Session, clientCaps(ctx, req), req.Params.InputResponses, req.Params.RequestState, h)
	res, err := t.Call(ctx, cr)
	h.mu.Lock()
	hold.running, hold.reserved = h.running, h.reserved
	h.ended = true
	h.mu.Unlock()
	return res, err
}

// callFailed answers a call that failed with a protocol error.
func callFailed(ss *mcp.ServerSession, err error) (mcp.Result, error) {
	var me *ask.MissingCapabilityError
	if !isModernSession(ss) && errors.As(err, &me) {
		// A 2025 client has no error code for this: the model reads why
		// the tool did not run.
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
	}
	return nil, protocolError(err)
}

func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// progress sends a tool's progress to the client of req, when it asked for
// progress; nil otherwise.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest) snapshot.ProgressFunc {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return func(p, total float64, msg string) {
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: total, Message: msg})
		if err != nil {
			s.opts.Logger.Debug("sending progress", "tool", req.Params.Name, "err", err)
		}
	}
}

// toolLog sends a tool's log records to the client of req as
// notifications/message, with the tool's name as the logger. The SDK drops
// the records below the level the client set (logging/setLevel in a
// 2025-11-25 session, _meta logLevel on a 2026-07-28 request), and all of
// them when it set none.
func (s *Server) toolLog(ctx context.Context, req *mcp.CallToolRequest) snapshot.LogFunc {
	if !s.wantsLog(req) {
		// The SDK would drop every record: none is built (and an
		// adapter's backend is not asked for them: Request.LogWanted).
		return nil
	}
	name := req.Params.Name
	return func(level, msg string) {
		err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: name, Data: msg})
		if err != nil {
			s.opts.Logger.Debug("sending log record", "tool", name, "err", err)
		}
	}
}

// wantsLog reports whether the client of req may receive log records: a
// 2026-07-28 request that names a level in its _meta, or a session that
// set one (logging/setLevel). Until then the SDK sends none. The stateless
// fast path (fastpath.go) takes no request that names a level.
func (s *Server) wantsLog(req *mcp.CallToolRequest) bool {
	if req.Session == nil {
		return false
	}
	if m := req.Params.GetMeta(); m != nil {
		if _, ok := m[mcp.MetaKeyLogLevel]; ok {
			return true
		}
	}
	_, ok := s.logLevels.Load(weak.Make(req.Session))
	return ok
}

// setLogLevel records that ss set a log level, until ss is collected.
func (s *Server) setLogLevel(ss *mcp.ServerSession, level mcp.LoggingLevel) {
	key := weak.Make(ss)
	if _, loaded := s.logLevels.Swap(key, level); !loaded {
		runtime.AddCleanup(ss, func(k weak.Pointer[mcp.ServerSession]) { s.logLevels.Delete(k) }, key)
	}
}

func (s *Server) cacheable() mcp.Cacheable {
	return mcp.Cacheable{TTLMs: int(s.opts.ListTTL / time.Millisecond), CacheScope: "public"}
}

// cacheableFor is cacheable for an answer to caller: what an authenticated
// caller sees depends on its scopes, so no shared cache may hand it to
// another.
func (s *Server) cacheableFor(caller *principal.Principal) mcp.Cacheable {
	c := s.cacheable()
	if caller != nil {
		c.CacheScope = "private"
	}
	return c
}

// page cuts one page out of a list of n items. Cursors are offsets into the
// list: a reload between pages may shift them, and the client is told of the
// reload by list_changed.
func (s *Server) page(cursor string, n int) (start, end int, next string, err error) {
	if cursor != "" {
		b, derr := base64.RawURLEncoding.DecodeString(cursor)
		off, perr := strconv.Atoi(string(b))
		if derr != nil || perr != nil || off < 0 {
			return 0, 0, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		start = off
	}
	if start > n {
		start = n
	}
	end = start + s.opts.PageSize
	if end < n {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	} else {
		end = n
	}
	return start, end, next, nil
}

func (s *Server) listTools(req *mcp.ListToolsRequest, caller *principal.Principal, toolset string) (mcp.Result, error) {
	snap, _, _ := viewFor(s.current.Load(), toolset, caller)
	start, end, next, err := s.page(cursor(req.Params != nil, func() string { return req.Params.Cursor }), len(snap.Tools))
	if err != nil {
		return nil, err
	}
	res := &mcp.ListToolsResult{Cacheable: s.cacheableFor(caller), NextCursor: next, Tools: make([]*mcp.Tool, 0, end-start)}
	for _, t := range snap.Tools[start:end] {
		res.Tools = append(res.Tools, t.Def)
	}
	return withExecution(req.Session, res, snap.Tools[start:end]), nil // tasks_legacy.go
}

func (s *Server) listPrompts(req *mcp.ListPromptsRequest, caller *principal.Principal, toolset string) (mcp.Result, error) {
	snap, _, _ := viewFor(s.current.Load(), toolset, caller)
	start, end, next, err := s.page(cursor(req.Params != nil, func() string { return req.Params.Cursor }), len(snap.Prompts))
	if err != nil {
		return nil, err
	}
	res := &mcp.ListPromptsResult{Cacheable: s.cacheableFor(caller), NextCursor: next, Prompts: make([]*mcp.Prompt, 0, end-start)}
	for _, p := range snap.Prompts[start:end] {
		res.Prompts = append(res.Prompts, p.Def)
	}
	return res, nil
}

func (s *Server) getPrompt(ctx context.Context, req *mcp.GetPromptRequest, caller *principal.Principal, toolset string) (mcp.Result, error) {
	snap := s.current.Load()
	_, ts, usable := viewFor(snap, toolset, caller)
	p, ok := snap.PromptFor(req.Params.Name, caller)
	if !ok || !usable || !ts.HasPrompt(req.Params.Name) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", req.Params.Name)}
	}
	res, err := p.Get(ctx, &snapshot.GetRequest{Args: req.Params.Arguments, Caller: caller,
		Answers: s.answers(snap, req.Session, clientCaps(ctx, req), req.Params.InputResponses, req.Params.RequestState, nil)})
	if err != nil {
		return nil, protocolError(err)
	}
	if res.InputRequests != nil {
		return newInputRequired(res.InputRequests, res.RequestState), nil
	}
	return markPrompt(req.Session, res), nil
}

func (s *Server) listResources(req *mcp.ListResourcesRequest, caller *principal.Principal, toolset string) (mcp.Result, error) {
	snap, _, _ := viewFor(s.current.Load(), toolset, caller)
	start, end, next, err := s.page(cursor(req.Params != nil, func() string { return req.Params.Cursor }), len(snap.Resources))
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourcesResult{Cacheable: s.cacheableFor(caller), NextCursor: next, Resources: make([]*mcp.Resource, 0, end-start)}
	for _, r := range snap.Resources[start:end] {
		res.Resources = append(res.Resources, r.Def)
	}
	return res, nil
}

func (s *Server) listTemplates(req *mcp.ListResourceTemplatesRequest, caller *principal.Principal, toolset string) (mcp.Result, error) {
	snap, _, _ := viewFor(s.current.Load(), toolset, caller)
	start, end, next, err := s.page(cursor(req.Params != nil, func() string { return req.Params.Cursor }), len(snap.Templates))
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourceTemplatesResult{Cacheable: s.cacheableFor(caller), NextCursor: next, ResourceTemplates: make([]*mcp.ResourceTemplate, 0, end-start)}
	for _, t := range snap.Templates[start:end] {
		res.ResourceTemplates = append(res.ResourceTemplates, t.Def)
	}
	return res, nil
}

func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest, toolset string) (mcp.Result, error) {
	snap := s.current.Acquire()
	defer snap.Release()
	caller := principal.FromContext(ctx)
	_, ts, usable := viewFor(snap, toolset, caller)
	if !usable {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	res, found, err := snap.ReadResource(ctx, &snapshot.ReadRequest{URI: req.Params.URI, Caller: caller, Toolset: ts})
	if !found {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return nil, rpcErr // a template variable that breaks its rules: -32602
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	res.Cacheable = s.cacheableFor(principal.FromContext(ctx))
	return markRead(req.Session, res), nil
}

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest, toolset string) (*mcp.CompleteResult, error) {
	p := req.Params
	if p == nil || p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion needs a ref"}
	}
	// Acquired: a contributed prompt or template is completed by its
	// backend, which must not be closed meanwhile.
	snap := s.current.Acquire()
	defer snap.Release()
	caller := principal.FromContext(ctx)
	_, ts, usable := viewFor(snap, toolset, caller)
	if !usable || !ts.Completable(p.Ref) || !snap.Completable(p.Ref, caller) {
		// What the caller may not see completes to nothing, as an
		// unknown reference does, and no backend is asked.
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	cr := &adapter.CompleteRequest{Ref: p.Ref, Argument: p.Argument.Name, Value: p.Argument.Value}
	if p.Context != nil {
		cr.Context = p.Context.Arguments
	}
	return &mcp.CompleteResult{Completion: *snap.Complete(ctx, cr)}, nil
}

// cursor reads a list request's cursor; the params of a list request are
// optional.
func cursor(present bool, get func() string) string {
	if !present {
		return ""
	}
	return get()
}
