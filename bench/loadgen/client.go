package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The clients below speak just enough MCP to drive a server: JSON-RPC
// requests built as bytes, responses checked for an error or isError. They
// are deliberately thin, so that the load generator's own CPU stays small
// beside the server's.

const (
	legacyVersion = "2025-11-25"
	modernVersion = "2026-07-28"
)

// conn is one client's connection: a legacy session, a series of stateless
// modern requests, or a share of a stdio pipe.
type conn interface {
	// request sends one request and returns its result, or an error for a
	// transport failure, a JSON-RPC error or a tool result with isError.
	request(ctx context.Context, method, name string, params json.RawMessage) (json.RawMessage, error)
	close()
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// check turns a response into a result or an error.
func (r *rpcResponse) check(method string) (json.RawMessage, error) {
	if r.Error != nil {
		return nil, fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
	}
	if len(r.Result) == 0 {
		return nil, errors.New("response without result")
	}
	if method == "tools/call" && bytes.Contains(r.Result, []byte(`"isError":true`)) {
		return nil, fmt.Errorf("tool error: %.200s", r.Result)
	}
	return r.Result, nil
}

// request builds a JSON-RPC request body.
func requestBody(buf []byte, id int64, method string, params json.RawMessage) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, `,"method":"`...)
	buf = append(buf, method...)
	buf = append(buf, '"')
	if len(params) > 0 {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	return append(buf, '}')
}

// withMeta adds the _meta every 2026-07-28 request carries to params.
func withMeta(params json.RawMessage) json.RawMessage {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernVersion + `","io.modelcontextprotocol/clientCapabilities":{}}`
	p := bytes.TrimSpace(params)
	if len(p) < 2 || p[0] != '{' {
		return json.RawMessage("{" + meta + "}")
	}
	inner := bytes.TrimSpace(p[1 : len(p)-1])
	if len(inner) == 0 {
		return json.RawMessage("{" + meta + "}")
	}
	return json.RawMessage("{" + meta + "," + string(inner) + "}")
}

// newHTTPClient returns a client keeping up to n connections to one host.
func newHTTPClient(n int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        n + 4,
			MaxIdleConnsPerHost: n + 4,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
		Timeout: 60 * time.Second,
	}
}

// httpConn is one client over Streamable HTTP: a legacy session when
// modern is false, stateless 2026-07-28 requests otherwise.
type httpConn struct {
	hc      *http.Client
	url     string
	modern  bool
	session string
	id      int64
	buf     []byte
}

func dialHTTP(ctx context.Context, hc *http.Client, url string, modern bool) (*httpConn, error) {
	c := &httpConn{hc: hc, url: url, modern: modern}
	if modern {
		return c, nil
	}
	return c, c.initialize(ctx)
}

// initialize runs the legacy handshake: initialize, then
// notifications/initialized, and keeps the session id.
func (c *httpConn) initialize(ctx context.Context) error {
	params := json.RawMessage(`{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"mcpd-loadgen","version":"1.0.0"}}`)
	c.session = ""
	if _, err := c.request(ctx, "initialize", "", params); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if c.session == "" {
		return errors.New("initialize: no Mcp-Session-Id in the response")
	}
	return c.notify(ctx, "notifications/initialized")
}

func (c *httpConn) post(ctx context.Context, body []byte, method, name string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	switch {
	case c.modern:
		h["Mcp-Protocol-Version"] = []string{modernVersion}
		h["Mcp-Method"] = []string{method}
		if name != "" {
			h["Mcp-Name"] = []string{name}
		}
	case c.session != "":
		h["Mcp-Session-Id"] = []string{c.session}
		h["Mcp-Protocol-Version"] = []string{legacyVersion}
	}
	return c.hc.Do(req)
}

func (c *httpConn) notify(ctx context.Context, method string) error {
	c.buf = append(c.buf[:0], `{"jsonrpc":"2.0","method":"`...)
	c.buf = append(c.buf, method...)
	c.buf = append(c.buf, `"}`...)
	resp, err := c.post(ctx, c.buf, method, "")
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: HTTP %s", method, resp.Status)
	}
	return nil
}

func (c *httpConn) request(ctx context.Context, method, name string, params json.RawMessage) (json.RawMessage, error) {
	c.id++
	if c.modern {
		params = withMeta(params)
	}
	c.buf = requestBody(c.buf[:0], c.id, method, params)
	resp, err := c.post(ctx, c.buf, method, name)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: HTTP %s: %s", method, resp.Status, strings.TrimSpace(string(b)))
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && !c.modern {
		c.session = sid
	}
	var r rpcResponse
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if err := readSSEResponse(resp.Body, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		io.Copy(io.Discard, resp.Body) // let the connection be reused
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: decoding the response: %w", method, err)
		}
	}
	return r.check(method)
}

// deleteSession ends a legacy session.
func (c *httpConn) deleteSession(ctx context.Context) error {
	if c.session == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return err
	}
	req.Header["Mcp-Session-Id"] = []string{c.session}
	req.Header["Mcp-Protocol-Version"] = []string{legacyVersion}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.session = ""
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("DELETE: HTTP %s", resp.Status)
	}
	return nil
}

func (c *httpConn) close() {
	c.deleteSession(context.Background())
}

// readSSEResponse reads events until one carries a JSON-RPC response
// (progress and other notifications are skipped).
func readSSEResponse(body io.Reader, r *rpcResponse) error {
	br := bufio.NewReaderSize(body, 4096)
	var data, long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...) // a line longer than the buffer
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("event stream ended without a response")
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				*r = rpcResponse{}
				if err := json.Unmarshal(data, r); err != nil {
					return fmt.Errorf("decoding an event: %w", err)
				}
				if len(r.ID) > 0 && r.Method == "" {
					return nil
				}
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimPrefix(line[5:], []byte(" "))...)
		}
	}
}

// stdioConn is a stdio server shared by every client goroutine: requests
// are written under a lock and responses matched to them by id.
type stdioConn struct {
	mu      sync.Mutex
	w       *bufio.Writer
	wc      io.Closer
	id      atomic.Int64
	pending sync.Map // id → chan rpcResponse
	notes   chan rpcResponse
	err     atomic.Pointer[error]
	done    chan struct{}
}

func newStdioConn(w io.WriteCloser, r io.Reader) *stdioConn {
	c := &stdioConn{w: bufio.NewWriter(w), wc: w, notes: make(chan rpcResponse, 64), done: make(chan struct{})}
	go c.read(r)
	return c
}

func (c *stdioConn) read(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var resp rpcResponse
			if jerr := json.Unmarshal(line, &resp); jerr != nil {
				e := fmt.Errorf("stdout is not JSON-RPC: %q", truncate(line, 200))
				c.err.Store(&e)
				return
			}
			if resp.Method != "" {
				select {
				case c.notes <- resp:
				default:
				}
				continue
			}
			id, _ := strconv.ParseInt(string(resp.ID), 10, 64)
			if ch, ok := c.pending.LoadAndDelete(id); ok {
				ch.(chan rpcResponse) <- resp
			}
		}
		if err != nil {
			e := fmt.Errorf("server stdout: %w", err)
			c.err.Store(&e)
			return
		}
	}
}

func (c *stdioConn) write(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.w.Write(b)
	c.w.WriteByte('\n')
	return c.w.Flush()
}

func (c *stdioConn) request(ctx context.Context, method, name string, params json.RawMessage) (json.RawMessage, error) {
	id := c.id.Add(1)
	ch := make(chan rpcResponse, 1)
	c.pending.Store(id, ch)
	var buf [512]byte
	if err := c.write(requestBody(buf[:0], id, method, params)); err != nil {
		c.pending.Delete(id)
		return nil, err
	}
	select {
	case r := <-ch:
		return r.check(method)
	case <-c.done:
		c.pending.Delete(id)
		if e := c.err.Load(); e != nil {
			return nil, *e
		}
		return nil, errors.New("server closed stdout")
	case <-ctx.Done():
		c.pending.Delete(id)
		return nil, ctx.Err()
	}
}

func (c *stdioConn) initialize(ctx context.Context) error {
	params := json.RawMessage(`{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"mcpd-loadgen","version":"1.0.0"}}`)
	if _, err := c.request(ctx, "initialize", "", params); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return c.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

func (c *stdioConn) close() { c.wc.Close() }

// shared lets several client goroutines use one stdioConn.
type shared struct{ *stdioConn }

func (shared) close() {}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
