package mcpadapter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Why an upstream request failed, in words: the SDK's HTTP transport
// reports every failure to reach an upstream (a reset connection, a 502)
// as its "rejected by transport" error, with at most the status's text.
// mcpd keeps, per request, the status of the upstream's latest HTTP answer
// (headerTransport records it in the request's context), and says the
// status, or what became of the connection, naming the upstream. The body
// of an error answer goes to mcpd's log only (its first
// httpFailureBodyBytes, redacted): an error page may hold what the
// upstream's operator never meant for callers (stack traces, internal
// hosts), and the status is what a caller can act on.

// httpFailureBodyBytes is how much of an error answer's body is logged.
const httpFailureBodyBytes = 512

// codeRejected is the SDK's "rejected by transport" (jsonrpc2.ErrRejected):
// the request did not get an answer from the upstream's MCP server.
const codeRejected = -32005

// httpAnswer is the latest HTTP answer to the requests of one upstream
// request (its context).
type httpAnswer struct {
	mu     sync.Mutex
	status int    // 0: none, or the latest request got no answer
	body   []byte // the start of an error answer's body
}

type httpAnswerKey struct{}

// withHTTPAnswer has the upstream requests made with ctx record their
// latest HTTP answer (kept if ctx has one).
func withHTTPAnswer(ctx context.Context) context.Context {
	if _, ok := ctx.Value(httpAnswerKey{}).(*httpAnswer); ok {
		return ctx
	}
	return context.WithValue(ctx, httpAnswerKey{}, &httpAnswer{})
}

// recordHTTPAnswer records res (nil: no answer) for the request r, when
// its context asks for it. An error answer's body is read for its start,
// which is put back for the SDK.
func recordHTTPAnswer(r *http.Request, res *http.Response) {
	a, ok := r.Context().Value(httpAnswerKey{}).(*httpAnswer)
	if !ok {
		return
	}
	status, body := 0, []byte(nil)
	if res != nil {
		status = res.StatusCode
		if (status < 200 || status > 299) && res.Body != nil {
			body = make([]byte, httpFailureBodyBytes)
			n, _ := io.ReadFull(res.Body, body)
			body = body[:n]
			res.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), res.Body), res.Body}
		}
	}
	a.mu.Lock()
	a.status, a.body = status, body
	a.mu.Unlock()
}

// answerStatus is the status of the latest HTTP answer to the requests
// made with ctx (withHTTPAnswer); 0: none.
func answerStatus(ctx context.Context) int {
	a, ok := ctx.Value(httpAnswerKey{}).(*httpAnswer)
	if !ok {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// errUnauthorized is an upstream's 401 to the supervisor's handshake
// (errors.Is of an unauthorizedError).
var errUnauthorized = errors.New("the upstream requires authorization")

type unauthorizedError struct{ error }

func (unauthorizedError) Is(target error) bool { return target == errUnauthorized }

// transportFailure says why a request to the upstream got no usable
// answer: the status of an HTTP answer that was not a success, or what
// became of the connection; err otherwise.
func (u *upstream) transportFailure(ctx context.Context, err error) string {
	if a, ok := ctx.Value(httpAnswerKey{}).(*httpAnswer); ok {
		a.mu.Lock()
		status, body := a.status, a.body
		a.mu.Unlock()
		// A redirect is refused by the client (engine/outbound), whose
		// error names the Location: err says more than the status.
		if status != 0 && (status < 200 || status > 299) && (status < 300 || status > 399) {
			u.log.Warn("upstream answered with an HTTP error", "status", status,
				"body", u.redact(string(bytes.ToValidUTF8(body, []byte("\uFFFD")))))
			return fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
		}
	}
	var op *net.OpError
	switch {
	case errors.As(err, &op):
		// Its Err only ("read: connection reset by peer"): the addresses
		// are the upstream's, which callers need not see.
		return "the connection failed: " + op.Err.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection was closed before an answer"
	}
	return u.redact(err.Error())
}

// upstreamRefusal is the upstream's own JSON-RPC error in err, if any: not
// the SDK's "rejected by transport", which is no answer at all.
func upstreamRefusal(err error) (*jsonrpc.Error, bool) {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code == codeRejected {
		return nil, false
	}
	return rpcErr, true
}
