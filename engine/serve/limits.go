package serve

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/netutil"
)

// ConnLimits bound what HTTP connections can hold, for the http.Server and
// the listener; HTTPOptions holds the limits applied per request.
type ConnLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for this
	// long.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the size of a request's headers (431 past it).
	MaxHeaderBytes int
	// MaxConns caps the connections open at once; further clients wait in
	// the kernel's accept queue until one closes. 0: no cap.
	MaxConns int
}

// NewHTTPServer returns an http.Server for h with the connection limits.
// It sets no ReadTimeout or WriteTimeout: those would also cut SSE streams
// and long tool calls, so the handler bounds the body read and each write
// instead (HTTPOptions.ReadTimeout, WriteTimeout).
func NewHTTPServer(h http.Handler, l ConnLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// LimitListener caps ln at l.MaxConns connections open at once.
func LimitListener(ln net.Listener, l ConnLimits) net.Listener {
	if l.MaxConns <= 0 {
		return ln
	}
	return netutil.LimitListener(ln, l.MaxConns)
}

// requestLimits are the per-request limits of HTTPOptions: the in-flight
// caps, the body read deadline and the write deadline. front applies them.
type requestLimits struct {
	opts    HTTPOptions
	slots   chan struct{} // a slot per request in flight; nil: no cap
	maxBody int64
	bodies  atomic.Int64 // body bytes of the requests in flight
}

func newRequestLimits(opts HTTPOptions) *requestLimits {
	l := &requestLimits{opts: opts, maxBody: opts.MaxBody}
	if opts.MaxInflight > 0 {
		l.slots = make(chan struct{}, opts.MaxInflight)
	}
	if l.maxBody <= 0 {
		l.maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	return l
}

func (l *requestLimits) busy(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", "1")
	writeJSONRPCError(w, http.StatusServiceUnavailable, codeServerBusy, "the server is busy: "+msg+"; retry shortly")
}

// reserveBody charges r's body to MaxInflightBytes. It returns the bytes
// to give back when r is answered, or false when r was refused.
func (l *requestLimits) reserveBody(w http.ResponseWriter, r *http.Request) (int64, bool) {
	if l.opts.MaxInflightBytes <= 0 {
		return 0, true
	}
	// A body costs several times its size while it is decoded, validated
	// and handed to an adapter, so the bodies in flight are what fills
	// memory. A body of unknown length (chunked) is charged as the largest
	// allowed.
	n := r.ContentLength
	if n < 0 || n > l.maxBody {
		n = l.maxBody
	}
	if l.bodies.Add(n) > l.opts.MaxInflightBytes && n < l.bodies.Load() {
		l.bodies.Add(-n)
		l.busy(w, "the requests in flight carry "+strconv.FormatInt(l.opts.MaxInflightBytes>>20, 10)+" MiB of bodies (--max-inflight-bytes)")
		return 0, false
	}
	return n, true
}

// wrap puts the read deadline on r's body and returns w with the write
// deadline and, for a POST, the deferred flush of its response event (see
// respWriter): one allocation for all three.
func (l *requestLimits) wrap(w http.ResponseWriter, r *http.Request, post bool) *respWriter {
	x := &exchange{rw: respWriter{ResponseWriter: w, rc: *http.NewResponseController(w), filter: post}}
	rw := &x.rw
	if l.opts.ReadTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
		// The whole body must arrive within ReadTimeout of the headers;
		// then the deadline is lifted, since net/http keeps reading the
		// connection to notice a client that goes away, which must not
		// cancel a long call.
		if rw.rc.SetReadDeadline(time.Now().Add(l.opts.ReadTimeout)) == nil {
			x.body = deadlineBody{ReadCloser: r.Body, rc: &rw.rc}
			r.Body = &x.body
		}
	}
	if l.opts.WriteTimeout > 0 {
		// The deadline left by an earlier request on this connection is
		// replaced before anything is written.
		rw.deadline = l.opts.WriteTimeout
		if rw.extend(); rw.err != nil {
			rw.deadline = 0 // not supported by this writer
		}
	}
	return rw
}

// exchange holds what front wraps around one request.
type exchange struct {
	rw   respWriter
	body deadlineBody
}

// codeServerBusy is the JSON-RPC error code of a request refused because
// too many are in flight (in the range JSON-RPC leaves to servers).
const codeServerBusy = -32000

// deadlineBody lifts the read deadline once the body has been read.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if err == io.EOF {
			b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// respWriter is the response writer front hands on. With a deadline, it
// gives every write of a response time to reach the client, instead of
// one deadline for the whole response: an SSE stream or a long tool call
// may last for hours, but a client that stops reading is cut once a write
// has been blocked for WriteTimeout, and the handler, its goroutines and
// the result it holds are freed. To keep the cost of a plain request to
// one deadline update, the deadline is moved only when less than half of
// WriteTimeout is left, so a write gets between half of it and all of it.
//
// With filter (a POST), it defers the flush of a response event. The SDK
// streams the answer to a POST as server-sent events and flushes after each
// event, so a plain call would cost two writes to the socket: its response
// event, then the end of the stream when the handler returns. The flush
// after an event that carries a JSON-RPC response is skipped: the stream of
// a POST ends as soon as its last response is written, and net/http then
// sends the held event and the end of the stream in one write. Everything
// else (events carrying a request or a notification, such as progress;
// comments; a flush with nothing written) is flushed at once, so streaming
// is unchanged. See docs/performance.md for the measurements.
type respWriter struct {
	http.ResponseWriter
	rc       http.ResponseController // of ResponseWriter
	deadline time.Duration           // 0: no write deadline
	set      time.Time               // when the deadline was last moved
	err      error                   // from SetWriteDeadline: not supported by this writer

	filter  bool
	written int  // writes since the last flush
	hold    bool // every one of them was a response event
}

func (w *respWriter) extend() {
	now := time.Now()
	if now.Sub(w.set) < w.deadline/2 {
		return
	}
	w.set = now
	w.err = w.rc.SetWriteDeadline(now.Add(w.deadline))
}

func (w *respWriter) WriteHeader(code int) {
	if w.deadline > 0 {
		w.extend()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *respWriter) Write(b []byte) (int, error) {
	if w.filter {
		if w.written == 0 {
			w.hold = true
		}
		w.written++
		w.hold = w.hold && isResponseEvent(b)
	}
	if w.deadline > 0 {
		w.extend()
	}
	return w.ResponseWriter.Write(b)
}

// FlushError is what http.ResponseController.Flush calls.
func (w *respWriter) FlushError() error {
	if w.filter {
		if w.written > 0 && w.hold {
			return nil
		}
		w.written = 0
	}
	if w.deadline > 0 {
		w.extend()
	}
	return w.rc.Flush()
}

func (w *respWriter) Flush() { w.FlushError() }

// isResponseEvent reports whether b is one server-sent event carrying a
// JSON-RPC response (an id, and no method). The SDK writes each event with
// one Write.
func isResponseEvent(b []byte) bool {
	return bytes.Contains(b, []byte("data: {")) && bytes.Contains(b, []byte(`"id":`)) && !bytes.Contains(b, []byte(`"method":`))
}

// Unwrap lets http.ResponseController reach the writer's other methods
// (deadlines, full duplex).
func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// acquire takes a slot for a call or read, or reports that all
// Options.MaxInflight are taken.
func (s *Server) acquire() bool {
	if s.running == nil {
		return true
	}
	select {
	case s.running <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Server) release() {
	if s.running != nil {
		<-s.running
	}
}

func (s *Server) busy() error {
	return &jsonrpc.Error{Code: codeServerBusy, Message: fmt.Sprintf("the server is busy: %d calls are running (--max-inflight); retry shortly", s.opts.MaxInflight)}
}
