package mcpadapter

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handing a fast-path exchange over to the SDK's client (fastcall.go).
//
// The fast path has sent its request and got an answer it does not read
// itself: a stream that carries more than the response, an error status,
// a failed connection. The request must not be sent again, so the SDK's
// CallTool is run with the answer in its context: its own POST of the call
// is taken back in headerTransport.RoundTrip (not sent) and answered with
// what the upstream sent to the fast path, the bytes already read first;
// the SDK then does what it always does with such an answer (relays the
// upstream's requests and notifications, fails the session, reconnects a
// stream with Last-Event-ID). The two requests differ only in their
// JSON-RPC id: the answer's id is the fast path's, so the response to it
// is given the SDK's id on the way in, and the SDK's notifications/cancelled
// (should the call be cancelled) the fast path's on the way out.

type handoverKey struct{}

// handover is one exchange handed over.
type handover struct {
	res *http.Response // what the upstream answered, or
	err error          // why there was no answer
	id  []byte         // the fast path's request id

	mu    sync.Mutex
	taken bool   // the SDK's request was answered with res
	sdkID []byte // the SDK's request id
}

// handoverOf is the exchange handed over in ctx, if any.
func handoverOf(ctx context.Context) *handover {
	h, _ := ctx.Value(handoverKey{}).(*handover)
	return h
}

// handOver runs the SDK's CallTool for an exchange the fast path sent.
func (u *upstream) handOver(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams, id []byte, res *http.Response, err error) (mcp.Result, error) {
	h := &handover{res: res, err: err, id: id}
	r, sendErr := send(context.WithValue(ctx, handoverKey{}, h), cs, p)
	h.mu.Lock()
	if !h.taken && h.res != nil {
		// The SDK failed before sending (its session had closed): the
		// answer is nobody's.
		h.res.Body.Close()
	}
	h.taken = true
	h.mu.Unlock()
	return r, sendErr
}

// roundTrip is the transport's for the requests the SDK makes under a
// handed-over exchange; next sends a request.
func (h *handover) roundTrip(r *http.Request, next http.RoundTripper) (*http.Response, error) {
	plain := r.WithContext(context.WithValue(r.Context(), handoverKey{}, (*handover)(nil)))
	switch r.Method {
	case http.MethodPost:
		var body []byte
		if r.Body != nil {
			b, err := io.ReadAll(io.LimitReader(r.Body, maxUpstreamMessage))
			r.Body.Close()
			if err != nil {
				return nil, err
			}
			body = b
		}
		method, id, cancelled := requestOf(body)
		h.mu.Lock()
		if !h.taken && method == "tools/call" && id != nil {
			h.taken, h.sdkID = true, id
			res, err := h.res, h.err
			h.mu.Unlock()
			if err != nil {
				return nil, err
			}
			out := *res
			out.Request = r
			out.Body = newIDRewriter(res.Body, h.id, id, mediaType(res.Header.Get("Content-Type")) == "text/event-stream")
			return &out, nil
		}
		if h.taken && method == "notifications/cancelled" && cancelled != nil && bytes.Equal(cancelled, h.sdkID) {
			start, end := cancelledSpan(body)
			body = replaceSpan(body, start, end, h.id)
		}
		h.mu.Unlock()
		plain.Body = io.NopCloser(bytes.NewReader(body))
		plain.ContentLength = int64(len(body))
		plain.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		return next.RoundTrip(plain)
	case http.MethodGet:
		// The SDK resumes the call's stream (Last-Event-ID): its response
		// still carries the fast path's id.
		res, err := next.RoundTrip(plain)
		h.mu.Lock()
		from, to := h.id, h.sdkID
		h.mu.Unlock()
		if err == nil && to != nil && mediaType(res.Header.Get("Content-Type")) == "text/event-stream" {
			res.Body = newIDRewriter(res.Body, from, to, true)
		}
		return res, err
	}
	return next.RoundTrip(plain)
}

// requestOf reads a request body the SDK sent: its method, its id (as
// written), and for notifications/cancelled the id it cancels.
func requestOf(body []byte) (method string, id, cancelled []byte) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return "", nil, nil
	}
	members(body, i, func(key []byte, vs, ve int) {
		switch string(key) {
		case `"method"`:
			method = methodName(body[vs:ve])
		case `"id"`:
			id = body[vs:ve]
		case `"params"`:
			if body[vs] == '{' {
				members(body, vs, func(k []byte, s, e int) {
					if string(k) == `"requestId"` {
						cancelled = body[s:e]
					}
				})
			}
		}
	})
	return method, id, cancelled
}

// cancelledSpan is where params.requestId's value is in body.
func cancelledSpan(body []byte) (int, int) {
	start, end := -1, -1
	members(body, skipSpace(body, 0), func(key []byte, vs, ve int) {
		if string(key) == `"params"` && body[vs] == '{' {
			members(body, vs, func(k []byte, s, e int) {
				if string(k) == `"requestId"` {
					start, end = s, e
				}
			})
		}
	})
	return start, end
}

func replaceSpan(b []byte, start, end int, with []byte) []byte {
	if start < 0 {
		return b
	}
	out := make([]byte, 0, len(b)-(end-start)+len(with))
	out = append(append(append(out, b[:start]...), with...), b[end:]...)
	return out
}

// rewriteID gives msg, when it is the response to the request from, the
// id to; any other message is returned as it is.
func rewriteID(msg, from, to []byte) []byte {
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return msg
	}
	start, end, isRequest := -1, -1, false
	members(msg, i, func(key []byte, vs, ve int) {
		switch string(key) {
		case `"id"`:
			start, end = vs, ve
		case `"method"`:
			isRequest = true
		}
	})
	if isRequest || start < 0 || !bytes.Equal(msg[start:end], from) {
		return msg
	}
	return replaceSpan(msg, start, end, to)
}

// newIDRewriter passes a response body on with the response to the
// request from given the id to: a JSON body is one message; an event
// stream's events are rewritten one by one (an event's data lines are
// joined as the SDK joins them). An event over maxUpstreamMessage is
// passed on as it is: the SDK refuses it.
func newIDRewriter(body io.ReadCloser, from, to []byte, stream bool) io.ReadCloser {
	if !stream {
		return &jsonIDRewriter{body: body, from: from, to: to}
	}
	return &sseIDRewriter{br: bufio.NewReaderSize(body, 32<<10), body: body, from: from, to: to}
}

type jsonIDRewriter struct {
	body     io.ReadCloser
	from, to []byte
	read     bool
	out      []byte
	err      error
}

func (j *jsonIDRewriter) Read(p []byte) (int, error) {
	if !j.read {
		j.read = true
		b, err := io.ReadAll(j.body)
		j.out, j.err = rewriteID(b, j.from, j.to), err
		if j.err == nil {
			j.err = io.EOF
		}
	}
	if len(j.out) == 0 {
		return 0, j.err
	}
	n := copy(p, j.out)
	j.out = j.out[n:]
	return n, nil
}

func (j *jsonIDRewriter) Close() error { return j.body.Close() }

type sseIDRewriter struct {
	br       *bufio.Reader
	body     io.ReadCloser
	from, to []byte
	event    []byte // the event being gathered, as read
	midLine  bool   // event ends within a line
	passing  bool   // the event is over the bound: passed on as read
	out      []byte
	err      error
}

func (s *sseIDRewriter) Close() error { return s.body.Close() }

func (s *sseIDRewriter) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			if len(s.event) > 0 {
				s.out, s.event = s.rewrite(s.event), nil
				continue
			}
			return 0, s.err
		}
		chunk, err := s.br.ReadSlice('\n')
		whole := err == nil
		if err != nil && err != bufio.ErrBufferFull {
			s.err = err
		}
		blank := whole && !s.midLine && (len(chunk) == 1 || (len(chunk) == 2 && chunk[0] == '\r'))
		s.midLine = !whole
		if s.passing {
			s.out = append(s.out[:0], chunk...)
			s.passing = !blank
			continue
		}
		s.event = append(s.event, chunk...)
		switch {
		case len(s.event) > maxUpstreamMessage:
			s.out, s.event, s.passing = s.event, nil, !blank
		case blank:
			s.out, s.event = s.rewrite(s.event), nil
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// rewrite rewrites one event (its lines, as read, its blank line last).
func (s *sseIDRewriter) rewrite(event []byte) []byte {
	var data [][]byte
	var fields, tail []byte
	for rest := event; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		content := bytes.TrimRight(line, "\r\n")
		field, value, ok := bytes.Cut(content, []byte{':'})
		switch {
		case len(content) == 0:
			tail = append(tail, line...)
		case ok && string(field) == "data":
			data = append(data, bytes.TrimSpace(value))
		default:
			fields = append(fields, line...)
		}
	}
	if len(data) == 0 {
		return event
	}
	msg := bytes.Join(data, []byte("\n"))
	m := rewriteID(msg, s.from, s.to)
	if bytes.Equal(m, msg) {
		return event
	}
	out := make([]byte, 0, len(event)+len(s.to)+8)
	out = append(out, fields...)
	for _, part := range bytes.Split(m, []byte("\n")) { // joined again by the SDK
		out = append(append(append(out, "data: "...), part...), '\n')
	}
	if len(tail) == 0 {
		tail = []byte("\n")
	}
	return append(out, tail...)
}
