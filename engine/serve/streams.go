package serve

import (
	"fmt"
	"net"
	"net/http"
	"sync"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// Long-lived streams, and why each caller gets a share of them.
//
// A legacy session's GET stream, a 2026 subscriptions/listen and the
// console's event stream stay open for as long as the client listens: they
// are exempt from MaxInflight (which bounds the work being done, and would
// be filled by idle listeners), and each holds a connection, a goroutine or
// two, buffers and a file descriptor. Unbounded, one caller could open
// hundreds, and with --max-conns set, fill every connection so that the
// calls of every other caller wait in the accept queue until they time out.
//
// So streams are counted apart from calls, per caller and in total:
//
//   - PerCaller bounds one caller's streams; past it a stream is refused
//     with 429. The caller is the verified principal; with authentication
//     off it is the client's IP address (behind a proxy, the proxy's: then
//     PerCaller acts as a second total).
//   - Max bounds the streams of all callers; past it a stream is refused
//     with 503. cmd/mcpd sets it below --max-conns, so that calls always
//     keep connections of their own however many streams are open.
//
// A refusal is answered at once with a JSON-RPC error that says which limit
// and what to do, and (HTTP/1) with Connection: close, so that the refused
// client does not keep a connection slot either. A refused legacy GET leaves its
// session working, without notifications (clients treat a GET that is not
// an event stream as "no stream offered"); a refused subscriptions/listen
// fails that request alone.

// StreamLimits bound the long-lived streams open at once.
type StreamLimits struct {
	// PerCaller caps the streams one caller holds open; more get 429.
	// 0: no cap.
	PerCaller int
	// Max caps the streams open over all callers; more get 503. 0: no cap.
	Max int
}

// Stream kinds, as the metrics and refusals name them.
const (
	StreamGet     = "get"     // a 2025-11-25 session's GET /mcp
	StreamListen  = "listen"  // a 2026-07-28 subscriptions/listen
	StreamConsole = "console" // the console's /ui/events
)

// codeTooManyStreams is the JSON-RPC error code of a refused stream, in
// the range JSON-RPC leaves to servers (beside codeServerBusy).
const codeTooManyStreams = -32001

// streamGate counts the streams open, per caller and in total.
type streamGate struct {
	lim StreamLimits

	mu       sync.Mutex
	total    int
	byCaller map[string]int
}

func newStreamGate(lim StreamLimits) *streamGate {
	return &streamGate{lim: lim, byCaller: map[string]int{}}
}

// open takes a stream for caller. It returns the release func, or a
// refusal: the HTTP status and the message.
func (g *streamGate) open(caller string) (release func(), status int, msg string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.byCaller[caller]
	switch {
	case g.lim.PerCaller > 0 && n >= g.lim.PerCaller:
		return nil, http.StatusTooManyRequests, fmt.Sprintf("too many streams: this caller has %d open, the most one caller may hold (--max-streams-per-caller); close one (an idle session or subscription) before opening another", n)
	case g.lim.Max > 0 && g.total >= g.lim.Max:
		return nil, http.StatusServiceUnavailable, fmt.Sprintf("too many streams: %d are open, the most this server holds so that calls keep connections (--max-streams); retry later", g.total)
	}
	g.byCaller[caller] = n + 1
	g.total++
	var once sync.Once
	return func() { once.Do(func() { g.close(caller) }) }, 0, ""
}

func (g *streamGate) close(caller string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total--
	if n := g.byCaller[caller] - 1; n > 0 {
		g.byCaller[caller] = n
	} else {
		delete(g.byCaller, caller)
	}
}

// streamCaller names the caller of a stream request: the principal the
// auth layer verified, else the client's IP address.
func streamCaller(r *http.Request) string {
	if ti := sdkauth.TokenInfoFromContext(r.Context()); ti != nil {
		return "principal " + ti.UserID
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "address " + host
}

// admitStream takes a stream of kind for r, or answers r with the refusal
// and returns nil.
func (s *Server) admitStream(w http.ResponseWriter, r *http.Request, kind string) (release func()) {
	caller := streamCaller(r)
	release, status, msg := s.streams.open(caller)
	if release != nil {
		return release
	}
	s.opts.Logger.Debug("refused a stream", "kind", kind, "caller", caller, "status", status)
	h := w.Header()
	h.Set("Retry-After", "5")
	// The refused client gives its connection back: under --max-conns a
	// kept-alive connection is a slot that calls could use. An HTTP/2
	// connection carries the client's other requests too, and a refused
	// stream holds no connection of its own there.
	if r.ProtoMajor == 1 {
		h.Set("Connection", "close")
	}
	writeJSONRPCError(w, status, codeTooManyStreams, msg)
	return nil
}

// LimitStreams counts every request next serves as a long-lived stream of
// kind (see StreamLimits), refusing those past the limits: for a handler
// that serves only streams, such as the console's event stream. It must run
// behind the authentication, to see the caller.
func (s *Server) LimitStreams(kind string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release := s.admitStream(w, r, kind)
		if release == nil {
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// StreamCount is the number of long-lived streams open (see StreamLimits).
func (s *Server) StreamCount() int {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	return s.streams.total
}
