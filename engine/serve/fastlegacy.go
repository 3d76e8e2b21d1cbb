package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/resultbuf"
	"github.com/mcpd/mcpd/engine/tasks"
)

// The fast path of 2025-11-25 sessions.
//
// A call in a legacy session costs what a stateless call cost before
// fastpath.go: the SDK reads the POST, decodes the batch, hands the
// message to the session's jsonrpc2 connection through a channel, which
// decodes it again, then its params, each decode with a fresh 32 KiB
// buffer, runs the handler on a goroutine of its own, and routes the answer
// back to the POST through a logical stream. legacyFast serves the
// tools/call and tools/list requests of an established session that need
// nothing of that machinery itself, with the stateless path's decoder,
// middleware chain and writer (a fastPath of its own, legacy: no error has
// an HTTP status), and the session's *mcp.ServerSession in the request, so
// that everything below (markCall, the audit's session id, the principal)
// sees what it sees on the SDK's path.
//
// It takes a request only when all of this holds, and leaves it to the SDK
// untouched otherwise (a body it read is put back):
//   - a POST with one Mcp-Session-Id of a session this handler opened, that
//     is open, whose client sent notifications/initialized, that negotiated
//     a version before 2026-07-28, and whose token's user is the one that
//     opened it (the SDK's hijacking check); no Last-Event-ID;
//   - MCP-Protocol-Version absent or a version the SDK serves before
//     2026-07-28; Content-Type and Accept as the stateless path wants them;
//   - a body of known length up to 64 KiB holding one request, tools/call
//     or tools/list, that the stateless path's strict decoder reads, with
//     params and an empty _meta or none (a progress token, or anything else
//     in _meta, is the SDK's);
//   - for tools/call: the session set no log level (a tool's records would
//     then be sent on the POST's stream), and the tool, as the caller sees
//     it, asks nothing of the client (no ask block, no relayed elicitation,
//     sampling or roots: those are requests on the POST's stream) and does
//     not run only as a task (tasks_legacy.go).
//
// What the SDK does for a session besides answering, it does here too: a
// request id already in flight in the session is refused as the SDK
// refuses it (400); notifications/cancelled naming a call served here
// cancels it (the notification still goes to the SDK, which answers it);
// the call runs with a context the client's disconnection does not end, as
// the session's calls do. And the idle timeout (HTTPOptions.SessionTimeout),
// which the SDK pauses only for the POSTs it serves, is kept here instead,
// with the SDK's rules, for every POST of the session whichever path serves
// it: the SDK's handler is given none.
//
// TestLegacyFastPathDifferential and FuzzLegacyFastPath send the same
// requests through sessions of both paths and compare the answers byte for
// byte.
type legacyFast struct {
	s        *Server
	sdk      http.Handler // the SDK's stateful handler
	fp       *fastPath    // the middleware chain and the writer
	timeout  time.Duration
	versions []string // mcp.SupportedProtocolVersions

	mu       sync.Mutex
	sessions map[string]*legacySession
}

func newLegacyFast(s *Server, opts HTTPOptions, ep *endpoint, sdk http.Handler) *legacyFast {
	fp := newFastPath(s, opts, ep)
	fp.legacy = true
	return &legacyFast{s: s, sdk: sdk, fp: fp, timeout: opts.SessionTimeout, versions: mcp.SupportedProtocolVersions(),
		sessions: map[string]*legacySession{}}
}

// legacySession is what legacyFast knows of one session.
type legacySession struct {
	ss     *mcp.ServerSession // set by legacyHook when initialize succeeds
	userID string             // of the token that opened it, as the SDK keeps it
	ready  atomic.Bool        // notifications/initialized came, and the version is served here
	closed atomic.Bool

	mu    sync.Mutex
	calls map[string]context.CancelFunc // by the wire id: calls in flight here
	refs  int                           // POSTs in flight, for the idle timer
	timer *time.Timer                   // nil: no timeout, or stopped for good
}

// legacySlotKey is the context key under which an initialize POST carries
// its *legacySession to legacyHook: the SDK derives every handler context
// of the session from the context of the POST that opened it.
type legacySlotKey struct{}

// legacyHook is the receiving middleware that tells legacyFast of the
// sessions it may serve: the session an initialize opened, and that its
// client sent notifications/initialized.
func (s *Server) legacyHook(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		switch method {
		case "initialize", "notifications/initialized":
		default:
			return res, err
		}
		ls, _ := ctx.Value(legacySlotKey{}).(*legacySession)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ls == nil || ss == nil || err != nil {
			return res, err
		}
		if method == "initialize" {
			ls.mu.Lock()
			if ls.ss == nil {
				ls.ss = ss
			}
			ls.mu.Unlock()
			return res, err
		}
		ls.mu.Lock()
		same := ls.ss == ss
		ls.mu.Unlock()
		if p := ss.InitializeParams(); same && p != nil && p.ProtocolVersion < protocol2026 {
			ls.ready.Store(true)
		}
		return res, err
	}
}

func (lf *legacyFast) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		if r.Method != http.MethodPost {
			lf.sdk.ServeHTTP(w, r)
			return
		}
		lf.open(w, r)
		return
	}
	ls := lf.lookup(sid)
	if ls == nil {
		lf.sdk.ServeHTTP(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		ls.startPOST()
		defer ls.endPOST(lf.timeout)
		if lf.serve(w, r, ls) {
			return
		}
	case http.MethodDelete:
		if ls.owns(r) {
			// The SDK closes the session now; its id is unknown from
			// here on, on both paths.
			lf.forget(sid, ls)
		}
	}
	lf.sdk.ServeHTTP(w, r)
}

// open serves a POST without a session, which may open one (initialize),
// and records the session it opened.
func (lf *legacyFast) open(w http.ResponseWriter, r *http.Request) {
	ls := &legacySession{}
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		ls.userID = ti.UserID
	}
	lf.sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), legacySlotKey{}, ls)))
	// The SDK sends the new session's id in the answer to initialize,
	// and only there; the session lives on if initialize succeeded.
	sid := w.Header().Get("Mcp-Session-Id")
	ls.mu.Lock()
	ss := ls.ss
	ls.mu.Unlock()
	if sid == "" || ss == nil || ss.ID() != sid {
		return
	}
	if lf.timeout > 0 {
		ls.timer = time.AfterFunc(lf.timeout, func() { ss.Close() })
	}
	lf.mu.Lock()
	lf.sessions[sid] = ls
	lf.mu.Unlock()
	go func() {
		// However the session ends (DELETE, idle, --max-sessions, a slow
		// client, shutdown), its id is unknown from then on.
		_ = ss.Wait()
		lf.forget(sid, ls)
	}()
}

func (lf *legacyFast) lookup(sid string) *legacySession {
	lf.mu.Lock()
	ls := lf.sessions[sid]
	lf.mu.Unlock()
	if ls == nil || ls.closed.Load() {
		return nil
	}
	return ls
}

func (lf *legacyFast) forget(sid string, ls *legacySession) {
	ls.closed.Store(true)
	ls.mu.Lock()
	if ls.timer != nil {
		ls.timer.Stop()
		ls.timer = nil
	}
	ls.mu.Unlock()
	lf.mu.Lock()
	if lf.sessions[sid] == ls {
		delete(lf.sessions, sid)
	}
	lf.mu.Unlock()
}

// owns reports whether r's token is that of the user who opened the
// session, as the SDK checks it (lookupSession): else the SDK answers 403.
func (ls *legacySession) owns(r *http.Request) bool {
	if ls.userID == "" {
		return true
	}
	ti := auth.TokenInfoFromContext(r.Context())
	return ti != nil && ti.UserID == ls.userID
}

// startPOST and endPOST are the SDK's sessionInfo.startPOST and endPOST:
// the idle timer is stopped while a POST of the session is served, and
// started again when the last one ends.
func (ls *legacySession) startPOST() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.timer == nil {
		return
	}
	if ls.refs == 0 {
		ls.timer.Stop()
	}
	ls.refs++
}

func (ls *legacySession) endPOST(timeout time.Duration) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.timer == nil {
		return
	}
	ls.refs--
	if ls.refs == 0 {
		ls.timer.Reset(timeout)
	}
}

// serve serves r and reports true, or reports false having changed nothing
// the SDK reads.
func (lf *legacyFast) serve(w http.ResponseWriter, r *http.Request, ls *legacySession) bool {
	h := r.Header
	if !ls.ready.Load() || len(h.Values("Mcp-Session-Id")) != 1 || len(h.Values("Last-Event-Id")) > 0 ||
		!lf.legacyVersion(h.Get("Mcp-Protocol-Version")) || !plainJSON(h.Get("Content-Type")) ||
		!acceptsBoth(h.Values("Accept")) || !ls.owns(r) {
		return false
	}
	body, ok := readFastBody(r, lf.fp.maxBody)
	if !ok {
		return false
	}
	fr := fastRequest{method: "tools/call"}
	if !bytes.Contains(body, []byte(`"tools/call"`)) {
		fr.method = "tools/list"
	}
	req, ok := lf.decode(&fr, body, r, ls)
	if !ok {
		ls.cancelled(body)
		r.Body = readBack{bytes.NewReader(body), r.Body}
		return false
	}
	// The session's calls run until they end, whether or not their
	// client waits for the answer; notifications/cancelled ends them.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	if !ls.begin(fr.id, cancel) {
		writeDuplicateID(w, fr.id, lf.fp.sse)
		return true
	}
	defer ls.end(fr.id)
	if lf.fp.served != nil {
		lf.fp.served("legacy " + fr.method)
	}
	// As on the 2026-07-28 fast path: the answer is written here, so a
	// tool's result may be built in buffers given back once it is
	// (engine/resultbuf). A call served here answers nothing but its own
	// POST (no log records, no questions: see decode), and a result
	// stored for later (a task's) is not the one written, so it keeps its
	// buffers.
	var lease *resultbuf.Lease
	if fr.method == "tools/call" {
		lease = lf.s.results.Lease()
		ctx = resultbuf.With(ctx, lease)
	}
	res, err := lf.fp.handle(ctx, fr.method, req)
	lf.fp.write(w, r, fr.id, res, err)
	lease.Release(res)
	return true
}

// legacyVersion reports whether an MCP-Protocol-Version header is one the
// SDK's stateful handler takes as it is: absent, or a version it serves
// before 2026-07-28.
func (lf *legacyFast) legacyVersion(v string) bool {
	return v == "" || (v < protocol2026 && slices.Contains(lf.versions, v))
}

// decode reads body as the SDK would and builds the request it would give
// the middleware; false for anything the SDK must serve.
func (lf *legacyFast) decode(fr *fastRequest, body []byte, r *http.Request, ls *legacySession) (mcp.Request, bool) {
	if !fr.decodeEnvelope(body) || fr.seen&(seenVersion|seenCaps|seenInfo) != 0 {
		return nil, false
	}
	extra := &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
	switch fr.method {
	case "tools/call":
		if fr.seen&seenName == 0 || fr.name == "" || fr.name == marker {
			return nil, false
		}
		req := &mcp.CallToolRequest{Session: ls.ss, Params: &mcp.CallToolParamsRaw{Meta: fr.meta, Name: fr.name, Arguments: fr.args}, Extra: extra}
		if lf.s.wantsLog(req) {
			return nil, false
		}
		// A tool that runs only as a task is refused with -32601, which
		// the SDK's jsonrpc2 rewords as "method not found": its answer.
		if t, ok := lf.s.current.Load().ToolFor(fr.name, principal.FromTokenInfo(extra.TokenInfo)); ok && (asksInCall(t, ls.ss) || t.Task().Mode == tasks.Required) { // fastrelay.go
			return nil, false
		}
		return req, true
	case "tools/list":
		if fr.seen&(seenName|seenArgs) != 0 {
			return nil, false
		}
		return &mcp.ListToolsRequest{Session: ls.ss, Params: &mcp.ListToolsParams{Meta: fr.meta, Cursor: fr.cursor}, Extra: extra}, true
	}
	return nil, false
}

// begin records a call in flight under its wire id; false if one is
// already.
func (ls *legacySession) begin(id []byte, cancel context.CancelFunc) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if _, dup := ls.calls[string(id)]; dup {
		return false
	}
	if ls.calls == nil {
		ls.calls = map[string]context.CancelFunc{}
	}
	ls.calls[string(id)] = cancel
	return true
}

func (ls *legacySession) end(id []byte) {
	ls.mu.Lock()
	delete(ls.calls, string(id))
	ls.mu.Unlock()
}

// cancelled cancels the call served here that body, a
// notifications/cancelled the SDK is about to receive, names.
func (ls *legacySession) cancelled(body []byte) {
	ls.mu.Lock()
	n := len(ls.calls)
	ls.mu.Unlock()
	if n == 0 || !bytes.Contains(body, []byte("notifications/cancelled")) {
		return
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			RequestID any `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "notifications/cancelled" {
		return
	}
	var id []byte
	switch v := msg.Params.RequestID.(type) {
	case float64:
		if v != math.Trunc(v) {
			return
		}
		// The SDK's ids are int64s made of the float64 encoding/json
		// reads (jsonrpc.MakeID), as readID makes its own.
		id = strconv.AppendInt(nil, int64(v), 10)
	case string:
		id = []byte(strconv.Quote(v))
	default:
		return
	}
	ls.mu.Lock()
	cancel := ls.calls[string(id)]
	ls.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// writeDuplicateID answers a call whose id is in flight in its session as
// the SDK's streamable transport does (writeJSONRPCError, encoded as
// jsonrpc2 encodes: no HTML escaping), after it has set the headers of the
// answer it then does not give.
func writeDuplicateID(w http.ResponseWriter, id []byte, sse bool) {
	var raw any
	_ = json.Unmarshal(id, &raw)
	jid, _ := jsonrpc.MakeID(raw)
	var buf bytes.Buffer
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"error":`)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(&jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("duplicate in-flight request ID %v", jid.Raw())})
	buf.Truncate(buf.Len() - 1)
	buf.WriteByte('}')
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache, no-transform")
	if sse {
		hdr.Set("Connection", "keep-alive")
	}
	hdr.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(buf.Bytes())
}
