package serve

import (
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

// limitRequests applies the per-request limits of opts: the in-flight cap,
// the body read deadline and the write deadline.
func limitRequests(opts HTTPOptions, next http.Handler) http.Handler {
	var slots chan struct{}
	if opts.MaxInflight > 0 {
		slots = make(chan struct{}, opts.MaxInflight)
	}
	maxBody := opts.MaxBody
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	var bodies atomic.Int64 // body bytes of the requests in flight
	busy := func(w http.ResponseWriter, msg string) {
		w.Header().Set("Retry-After", "1")
		writeJSONRPCError(w, http.StatusServiceUnavailable, codeServerBusy, "the server is busy: "+msg+"; retry shortly")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slots != nil && holdsSlot(r) {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			default:
				busy(w, strconv.Itoa(opts.MaxInflight)+" requests are in flight (--max-inflight)")
				return
			}
		}
		if opts.MaxInflightBytes > 0 && holdsSlot(r) {
			// A body costs several times its size while it is decoded,
			// validated and handed to an adapter, so the bodies in
			// flight are what fills memory. A body of unknown length
			// (chunked) is charged as the largest allowed.
			n := r.ContentLength
			if n < 0 || n > maxBody {
				n = maxBody
			}
			if bodies.Add(n) > opts.MaxInflightBytes && n < bodies.Load() {
				bodies.Add(-n)
				busy(w, "the requests in flight carry "+strconv.FormatInt(opts.MaxInflightBytes>>20, 10)+" MiB of bodies (--max-inflight-bytes)")
				return
			}
			defer bodies.Add(-n)
		}
		rc := http.NewResponseController(w)
		if opts.ReadTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			// The whole body must arrive within ReadTimeout of the
			// headers; then the deadline is lifted, since net/http keeps
			// reading the connection to notice a client that goes away,
			// which must not cancel a long call.
			if rc.SetReadDeadline(time.Now().Add(opts.ReadTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		if opts.WriteTimeout > 0 {
			// The deadline left by an earlier request on this connection
			// is replaced before anything is written.
			dw := &deadlineWriter{ResponseWriter: w, rc: rc, d: opts.WriteTimeout}
			if dw.extend(); dw.err == nil {
				w = dw
				// net/http writes what is buffered once the handler
				// returns: that write gets a deadline too.
				defer dw.extend()
			}
		}
		next.ServeHTTP(w, r)
	})
}

// codeServerBusy is the JSON-RPC error code of a request refused because
// too many are in flight (in the range JSON-RPC leaves to servers).
const codeServerBusy = -32000

// holdsSlot reports whether a request counts against MaxInflight: every
// POST except a 2026 subscriptions/listen stream, which stays open for as
// long as the client listens (like a legacy GET stream, which does not
// count either). The SDK checks that Mcp-Method matches the body.
func holdsSlot(r *http.Request) bool {
	return r.Method == http.MethodPost && r.Header.Get("Mcp-Method") != "subscriptions/listen"
}

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

// deadlineWriter gives every write of a response time to reach the client,
// instead of one deadline for the whole response: an SSE stream or a long
// tool call may last for hours, but a client that stops reading is cut once
// a write has been blocked for WriteTimeout, and the handler, its
// goroutines and the result it holds are freed. To keep the cost of a
// plain request to one deadline update, the deadline is moved only when
// less than half of WriteTimeout is left, so a write gets between half of
// it and all of it.
type deadlineWriter struct {
	http.ResponseWriter
	rc  *http.ResponseController
	d   time.Duration
	set time.Time // when the deadline was last moved
	err error     // from SetWriteDeadline: not supported by this writer
}

func (w *deadlineWriter) extend() {
	now := time.Now()
	if now.Sub(w.set) < w.d/2 {
		return
	}
	w.set = now
	w.err = w.rc.SetWriteDeadline(now.Add(w.d))
}

func (w *deadlineWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(b)
}

// FlushError is what http.ResponseController.Flush calls.
func (w *deadlineWriter) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

func (w *deadlineWriter) Flush() { w.FlushError() }

// Unwrap lets http.ResponseController reach the writer's other methods.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
