package httpadapter

import (
	"context"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Network failures are said in a few words, without the resolver's or the
// sockets' addresses: "lookup api.github.com on 10.0.0.2:53" told the model
// about the host's network and nothing it could act on.
func TestClassifyNetworkErrors(t *testing.T) {
	wrap := func(err error) error {
		return &url.Error{Op: "Get", URL: "https://api.github.com/users/x", Err: err}
	}
	dial := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 40000},
			Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 443}, Err: err}
	}
	dns := func(e net.DNSError) error { return wrap(dial(&e)) }
	tests := []struct {
		name string
		err  error
		want string
		kind errKind
	}{
		{"no such host", dns(net.DNSError{Err: "no such host", Name: "api.github.com", Server: "10.0.0.2:53", IsNotFound: true}),
			"cannot resolve host api.github.com: no such host", kindConnection},
		{"dns timeout", dns(net.DNSError{Err: "i/o timeout", Name: "api.github.com", Server: "10.0.0.2:53", IsTimeout: true}),
			"cannot resolve host api.github.com: the DNS lookup timed out", kindConnection},
		{"dns failure", dns(net.DNSError{Err: "server misbehaving", Name: "api.github.com", Server: "10.0.0.2:53"}),
			"cannot resolve host api.github.com", kindConnection},
		{"refused", wrap(dial(os.NewSyscallError("connect", syscall.ECONNREFUSED))), "connection refused", kindConnection},
		{"reset", wrap(dial(os.NewSyscallError("read", syscall.ECONNRESET))), "connection reset by the server", kindConnection},
		{"unreachable", wrap(dial(os.NewSyscallError("connect", syscall.ENETUNREACH))), "network unreachable", kindConnection},
		{"dial timeout", wrap(dial(timeoutErr{})), "timed out connecting", kindTimeout},
	}
	h := &handler{}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := h.classify(tc.err, ctx, ctx, "")
			if got.msg != tc.want || got.kind != tc.kind {
				t.Errorf("got %q (kind %v), want %q (kind %v)", got.msg, got.kind, tc.want, tc.kind)
			}
			if strings.Contains(got.msg, "10.0.0.") {
				t.Errorf("%q names an internal address", got.msg)
			}
		})
	}
}

// A real failure, from the operating system: a port nobody listens on.
func TestClassifyRealRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = net.Dial("tcp", addr)
	if err == nil {
		t.Skip("the port was taken again")
	}
	h := &handler{}
	if got := h.classify(&url.Error{Op: "Get", URL: "http://" + addr, Err: err}, context.Background(), context.Background(), ""); got.msg != "connection refused" {
		t.Errorf("got %q", got.msg)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
