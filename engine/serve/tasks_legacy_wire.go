package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two places where 2025-11-25's tasks meet the wire before the SDK
// (see tasks_legacy.go): the HTTP handler of legacy sessions and the stdio
// connection. Each moves a tools/call's params.task where the SDK keeps it
// (moveTaskParam), and gives notifications/tasks/status a way out.

// legacyTaskFront is in front of the SDK's handler of 2025-11-25
// sessions: a POST of a session has its tools/call's params.task moved,
// and a session's GET stream carries the status notifications of the
// session's tasks.
type legacyTaskFront struct {
	s       *Server
	next    http.Handler
	maxBody int64
}

func (f *legacyTaskFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	switch {
	case sid == "":
	case r.Method == http.MethodPost:
		f.rewrite(r, sid)
	case r.Method == http.MethodGet:
		sw := &statusWriter{ResponseWriter: w}
		defer f.s.ltasks.attach(sid, sw.inject)()
		w = sw
	}
	f.next.ServeHTTP(w, r)
}

// rewrite moves the task of a tools/call in r's body; a body it cannot
// read whole is left to the SDK, which meets the same.
func (f *legacyTaskFront) rewrite(r *http.Request, sid string) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	max := f.maxBody
	if max <= 0 {
		max = mcp.DefaultMaxRequestBodyBytes
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err == nil && int64(len(body)) <= max {
		if out, ok := moveTaskInMessage(body, sid); ok {
			r.Body = readBack{bytes.NewReader(out), r.Body}
			r.ContentLength = int64(len(out))
			return
		}
	}
	r.Body = readBack{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
}

// statusWriter is a GET stream's writer into which notifications are
// injected between the SDK's events: the SDK writes each event in one
// Write (writeEvent), so one lock makes them whole.
type statusWriter struct {
	http.ResponseWriter
	mu   sync.Mutex
	seen bool // the status was written
	open bool // the SDK accepted the stream: an event stream
	dead bool
}

// header notes the status of the answer; w.mu is held.
func (w *statusWriter) header(code int) {
	if !w.seen {
		w.seen = true
		w.open = code == http.StatusOK && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	}
}

func (w *statusWriter) WriteHeader(code int) {
	w.mu.Lock()
	w.header(code)
	w.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.header(http.StatusOK)
	n, err := w.ResponseWriter.Write(b)
	if err != nil {
		w.dead = true
	}
	return n, err
}

func (w *statusWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// inject writes msg as one event of the stream, if the stream is open.
func (w *statusWriter) inject(msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.open || w.dead {
		return
	}
	var b bytes.Buffer
	b.Grow(len(msg) + 32)
	b.WriteString("event: message\ndata: ")
	b.Write(msg)
	b.WriteString("\n\n")
	if _, err := w.ResponseWriter.Write(b.Bytes()); err != nil {
		w.dead = true
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// taskTransport wraps a stream transport (stdio) whose connection moves
// the task of each tools/call it reads, and carries the status
// notifications of the tasks created on it.
type taskTransport struct {
	inner mcp.Transport
	s     *Server
}

func (t *taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	tc := &taskConn{Connection: c, via: "stdio-" + hex.EncodeToString(b[:])}
	tc.detach = t.s.ltasks.attach(tc.via, tc.notify)
	return tc, nil
}

type taskConn struct {
	mcp.Connection
	via    string
	detach func()
	once   sync.Once
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "tools/call" && req.IsCall() {
		if p, ok := moveTaskParam(req.Params, c.via); ok {
			req.Params = p
		}
	}
	return msg, err
}

func (c *taskConn) notify(msg []byte) {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return
	}
	_ = c.Connection.Write(context.Background(), m)
}

func (c *taskConn) Close() error {
	c.once.Do(c.detach)
	return c.Connection.Close()
}
