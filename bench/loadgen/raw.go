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
	"slices"
	"strconv"
	"time"
)

// rawConn is an MCP client over Streamable HTTP on one keep-alive
// HTTP/1.1 connection, writing prebuilt requests and parsing responses by
// hand, so that the load generator's own CPU (it has one core, as the
// server does) stays small beside the server's and its latency steady. It
// understands what the servers under test send: Content-Length and chunked
// bodies, JSON and SSE responses. -client std uses net/http instead.
type rawConn struct {
	addr    string
	modern  bool
	session string
	id      int64
	nc      net.Conn
	br      *bufio.Reader
	req     []byte
	body    []byte
	resp    response
}

type response struct {
	status      int
	contentType string
	session     string
	close       bool
	body        []byte
}

func dialRaw(ctx context.Context, addr string, modern bool) (*rawConn, error) {
	c := &rawConn{addr: addr, modern: modern}
	if modern {
		return c, nil
	}
	return c, c.initialize(ctx)
}

func (c *rawConn) initialize(ctx context.Context) error {
	params := json.RawMessage(`{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"mcpd-loadgen","version":"1.0.0"}}`)
	c.session = ""
	if _, err := c.request(ctx, "initialize", "", params); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if c.session == "" {
		return errors.New("initialize: no Mcp-Session-Id in the response")
	}
	c.body = append(c.body[:0], `{"jsonrpc":"2.0","method":"notifications/initialized"}`...)
	if err := c.roundTrip("POST", "notifications/initialized", ""); err != nil {
		return err
	}
	if c.resp.status != 202 {
		return fmt.Errorf("notifications/initialized: HTTP %d", c.resp.status)
	}
	return nil
}

func (c *rawConn) request(ctx context.Context, method, name string, params json.RawMessage) (json.RawMessage, error) {
	c.id++
	if c.modern {
		params = withMeta(params)
	}
	c.body = requestBody(c.body[:0], c.id, method, params)
	if err := c.roundTrip("POST", method, name); err != nil {
		return nil, err
	}
	if c.resp.status != 200 {
		return nil, fmt.Errorf("%s: HTTP %d: %.200s", method, c.resp.status, c.resp.body)
	}
	if c.resp.session != "" && !c.modern {
		c.session = c.resp.session
	}
	var r rpcResponse
	if bytes.HasPrefix([]byte(c.resp.contentType), []byte("text/event-stream")) {
		if err := readSSEResponse(bytes.NewReader(c.resp.body), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
	} else if err := json.Unmarshal(c.resp.body, &r); err != nil {
		return nil, fmt.Errorf("%s: decoding the response: %w", method, err)
	}
	return r.check(method)
}

func (c *rawConn) deleteSession(ctx context.Context) error {
	if c.session == "" {
		return nil
	}
	c.body = c.body[:0]
	err := c.roundTrip("DELETE", "", "")
	c.session = ""
	if err != nil {
		return err
	}
	if c.resp.status/100 != 2 {
		return fmt.Errorf("DELETE: HTTP %d", c.resp.status)
	}
	return nil
}

func (c *rawConn) close() {
	c.deleteSession(context.Background())
	if c.nc != nil {
		c.nc.Close()
	}
}

// roundTrip sends c.body and reads the response into c.resp, dialing when
// there is no connection and retrying once on a connection the server
// closed while it was idle.
func (c *rawConn) roundTrip(verb, method, name string) error {
	for attempt := 0; ; attempt++ {
		fresh := c.nc == nil
		if fresh {
			nc, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
			if err != nil {
				return err
			}
			c.nc, c.br = nc, bufio.NewReaderSize(nc, 64<<10)
		}
		err := c.exchange(verb, method, name)
		if err == nil {
			if c.resp.close {
				c.nc.Close()
				c.nc = nil
			}
			return nil
		}
		c.nc.Close()
		c.nc = nil
		if fresh || attempt > 0 {
			return err
		}
	}
}

func (c *rawConn) exchange(verb, method, name string) error {
	b := append(c.req[:0], verb...)
	b = append(b, " /mcp HTTP/1.1\r\nHost: "...)
	b = append(b, c.addr...)
	b = append(b, "\r\nAccept: application/json, text/event-stream\r\n"...)
	if verb == "POST" {
		b = append(b, "Content-Type: application/json\r\n"...)
	}
	switch {
	case c.modern:
		b = append(b, "Mcp-Protocol-Version: "+modernVersion+"\r\nMcp-Method: "...)
		b = append(b, method...)
		b = append(b, "\r\n"...)
		if name != "" {
			b = append(b, "Mcp-Name: "...)
			b = append(b, name...)
			b = append(b, "\r\n"...)
		}
	case c.session != "":
		b = append(b, "Mcp-Protocol-Version: "+legacyVersion+"\r\nMcp-Session-Id: "...)
		b = append(b, c.session...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(c.body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, c.body...)
	c.req = b
	c.nc.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		return err
	}
	return c.readResponse()
}

func (c *rawConn) readResponse() error {
	r := &c.resp
	r.status, r.contentType, r.session, r.close, r.body = 0, "", "", false, r.body[:0]
	line, err := c.line()
	if err != nil {
		return err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return fmt.Errorf("bad status line %q", line)
	}
	r.status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return fmt.Errorf("bad status line %q", line)
	}
	length, chunked := -1, false
	for {
		line, err := c.line()
		if err != nil {
			return err
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, _ = strconv.Atoi(string(v))
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Content-Type")):
			r.contentType = string(v)
		case bytes.EqualFold(k, []byte("Mcp-Session-Id")):
			r.session = string(v)
		case bytes.EqualFold(k, []byte("Connection")):
			r.close = bytes.EqualFold(v, []byte("close"))
		}
	}
	switch {
	case chunked:
		for {
			line, err := c.line()
			if err != nil {
				return err
			}
			if i := bytes.IndexByte(line, ';'); i >= 0 {
				line = line[:i]
			}
			n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
			if err != nil {
				return fmt.Errorf("bad chunk size %q", line)
			}
			if n == 0 {
				for { // trailers, then the blank line
					line, err := c.line()
					if err != nil {
						return err
					}
					if len(line) == 0 {
						return nil
					}
				}
			}
			r.body, err = readN(c.br, r.body, int(n))
			if err != nil {
				return err
			}
			if _, err := c.line(); err != nil { // the chunk's CRLF
				return err
			}
		}
	case length >= 0:
		r.body, err = readN(c.br, r.body, length)
		return err
	case r.status == 204 || r.status == 304 || r.status/100 == 1:
		return nil
	default:
		// No length: the body runs to the end of the connection.
		r.close = true
		b, err := io.ReadAll(c.br)
		r.body = append(r.body, b...)
		return err
	}
}

// line reads one line without its CRLF. The returned slice is valid until
// the next read.
func (c *rawConn) line() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

func readN(br *bufio.Reader, dst []byte, n int) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	_, err := io.ReadFull(br, dst[start:])
	return dst, err
}
