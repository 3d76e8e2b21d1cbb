// Package netmsg says why an outbound HTTP request failed in a few words
// that a model (and an operator) can act on, without what the network
// errors of the standard library print besides: socket addresses, the
// resolver's address, the full URL with its query string. The HTTP adapter
// (its calls) and the identity package (its token requests) share it.
package netmsg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// StatusLine is a response's status as "404 Not Found".
func StatusLine(r *http.Response) string {
	if text := strings.TrimSpace(strings.TrimPrefix(r.Status, strconv.Itoa(r.StatusCode))); text != "" {
		return fmt.Sprintf("%d %s", r.StatusCode, text)
	}
	if text := http.StatusText(r.StatusCode); text != "" {
		return fmt.Sprintf("%d %s", r.StatusCode, text)
	}
	return strconv.Itoa(r.StatusCode)
}

// DNS says that a host name did not resolve, without the resolver's
// address that net.DNSError carries ("lookup api.github.com on
// 10.0.0.2:53: ...").
func DNS(e *net.DNSError) string {
	switch {
	case e.IsNotFound:
		return fmt.Sprintf("cannot resolve host %s: no such host", e.Name)
	case e.IsTimeout:
		return fmt.Sprintf("cannot resolve host %s: the DNS lookup timed out", e.Name)
	}
	return fmt.Sprintf("cannot resolve host %s", e.Name)
}

// Conn names the common ways a connection fails in a few words, without
// the local and remote socket addresses that net.OpError prints; "" for
// anything else.
func Conn(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	}
	return ""
}

// UnwrapURLError drops the *url.Error layers, whose text repeats the full
// URL, query string included.
func UnwrapURLError(err error) error {
	for {
		var ue *url.Error
		if !errors.As(err, &ue) {
			return err
		}
		err = ue.Err
	}
}

// Canceled says why a call's context ended.
func Canceled(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "the call's deadline passed"
	}
	return "the call was canceled"
}
