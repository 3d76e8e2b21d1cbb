package serve

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// drainTransport makes a stream transport (stdio) answer every request it
// has read before the session ends. The SDK ends a session as soon as its
// input ends or it is closed, and then writes no more answers: a client that
// closes stdin after sending calls, or a SIGTERM, used to lose the answers
// of every call in flight. Here the end of input is held back: the
// connection counts the calls it reads and the responses it writes, and
// reports the end only once they match (or the shutdown's grace period has
// cancelled the stragglers and their answers are written).
//
// During a shutdown's drain the input is still read, until the drain is
// over: a call in flight may be waiting for the client's answer to a
// question it asked (an elicitation, a sampling request), and the client
// may cancel a call. New requests are refused at once with an error, as
// the HTTP side refuses them once its listener closed. Reading stopped at
// the shutdown, so such a call waited for an answer that could not arrive
// until the grace period cancelled it.
//
// The SDK's connection types have an unexported hook for the negotiated
// protocol version, used only to refuse JSON-RPC batches from clients of
// 2025-06-18 and later; behind this wrapper such batches are served.
type drainTransport struct {
	inner mcp.Transport
	s     *Server
}

func (t *drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, s: t.s}, nil
}

type drainConn struct {
	mcp.Connection
	s *Server

	once sync.Once
	rctx context.Context // the read context, also cancelled when the drain begins
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	d := c.s.drain
	c.once.Do(func() {
		var cancel context.CancelFunc
		c.rctx, cancel = context.WithCancel(ctx)
		// Nothing read once the drain is over could be answered.
		go func() {
			select {
			case <-d.done:
				cancel()
			case <-c.rctx.Done():
			}
		}()
	})
	for {
		msg, err := c.Connection.Read(c.rctx)
		if err == nil {
			if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() && !d.admit() {
				c.refuse(r)
				continue
			}
			return msg, nil
		}
		if ctx.Err() != nil {
			return nil, err // the session itself is closing
		}
		if d.finished() {
			return nil, io.EOF // the shutdown's drain is over
		}
		if errors.Is(err, io.EOF) {
			// The input ended: answer what was read, then report the end.
			if !d.stopped() {
				c.s.opts.Logger.Info("input closed; answering the requests in flight")
			}
			_ = c.s.drainRequests(context.Background())
			return nil, io.EOF
		}
		return nil, err
	}
}

// refuse answers a request read during the drain with an error, without
// handing it to the SDK.
func (c *drainConn) refuse(r *jsonrpc.Request) {
	_ = c.Connection.Write(c.rctx, &jsonrpc.Response{ID: r.ID,
		Error: &jsonrpc.Error{Code: codeServerBusy, Message: "the server is shutting down: it takes no new requests"}})
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.s.drain.add(-1)
	}
	return err
}
