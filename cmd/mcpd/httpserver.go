package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpd/mcpd/engine/serve"
)

// httpLimits are the `mcpd serve` flags that bound what HTTP clients can
// make the server hold: time, connections, sessions, requests and bytes.
// Each is also read from MCPD_<FLAG>, like every flag.
//
// The defaults keep a server on a small machine near its 512 MiB soft
// memory limit (gc.go): at most 64 requests are served at once, with at
// most 64 MiB of request bodies between them (a body costs about eight
// times its size while it is decoded, validated and passed on: 64
// requests with 3 MiB arguments held 493 MB live, the 21 that fit in
// 64 MiB 170 MB), each at most 4 MiB, and with the adapters' default
// output caps results of about 1 MiB.
type httpLimits struct {
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	maxHeaderBytes    byteSize
	maxBody           byteSize
	maxInflightBytes  byteSize
	maxOutputBudget   byteSize
	maxConns          int
	maxInflight       int
	maxSessions       int
	maxStreams        int
	maxCallerStreams  int
}

func addHTTPLimitFlags(fs *flag.FlagSet) *httpLimits {
	l := &httpLimits{maxHeaderBytes: 64 << 10, maxBody: 4 << 20, maxInflightBytes: 64 << 20, maxOutputBudget: 256 << 20}
	fs.DurationVar(&l.readHeaderTimeout, "read-header-timeout", 10*time.Second, "time a client has to send a request's headers (0: no limit)")
	fs.DurationVar(&l.readTimeout, "read-timeout", 30*time.Second, "time a client has to send a request's body, after its headers (0: no limit)")
	fs.DurationVar(&l.writeTimeout, "write-timeout", 30*time.Second, "time one write of a response may stay blocked on a client that does not read (0: no limit); streams and long calls are not cut")
	fs.DurationVar(&l.idleTimeout, "idle-timeout", 60*time.Second, "close keep-alive connections idle this long (0: no limit)")
	fs.Var(&l.maxHeaderBytes, "max-header-bytes", "largest request header block, a `size` such as 64KiB (larger ones get 431)")
	fs.Var(&l.maxBody, "max-body", "largest request body, a `size` such as 4MiB (larger ones get 413)")
	fs.Var(&l.maxInflightBytes, "max-inflight-bytes", "request bodies in flight, a `size` such as 64MiB; a request past it gets 503 unless it is alone (0: no limit)")
	fs.Var(&l.maxOutputBudget, "max-output-budget", "what the results of the tool calls in flight hold, three times their output caps each, summed, a `size` such as 256MiB; a call past it waits up to 5s, then gets a busy tool error (0: no limit; stdio too)")
	fs.IntVar(&l.maxConns, "max-conns", 1024, "connections open at once; more wait to be accepted (0: no limit)")
	fs.IntVar(&l.maxInflight, "max-inflight", 64, "requests served and tool calls running at once; more get 503 or a busy error (0: no limit)")
	fs.IntVar(&l.maxSessions, "max-sessions", 1000, "2025-11-25 HTTP sessions open at once; a new one closes the one idle longest (0: no limit)")
	fs.IntVar(&l.maxStreams, "max-streams", 0, "long-lived streams (GET, subscriptions/listen, console events) open at once over all callers, below --max-conns so calls keep connections; more get 503 (0: half of --max-conns, no limit without it)")
	fs.IntVar(&l.maxCallerStreams, "max-streams-per-caller", 32, "long-lived streams one caller (principal, or client IP without auth) may hold open; more get 429 (0: no limit)")
	return l
}

// streams returns the stream limits: by default half of --max-conns for
// all streams, so that however many listeners are open, calls keep half
// the connections.
func (l *httpLimits) streams() serve.StreamLimits {
	max := l.maxStreams
	if max == 0 {
		max = l.maxConns / 2
	}
	return serve.StreamLimits{PerCaller: l.maxCallerStreams, Max: max}
}

// check refuses negative limits, which the flag package lets through.
func (l *httpLimits) check() error {
	for name, d := range map[string]time.Duration{
		"read-header-timeout": l.readHeaderTimeout, "read-timeout": l.readTimeout,
		"write-timeout": l.writeTimeout, "idle-timeout": l.idleTimeout,
	} {
		if d < 0 {
			return fmt.Errorf("--%s must not be negative, got %s", name, d)
		}
	}
	for name, n := range map[string]int{"max-conns": l.maxConns, "max-inflight": l.maxInflight, "max-sessions": l.maxSessions,
		"max-streams": l.maxStreams, "max-streams-per-caller": l.maxCallerStreams} {
		if n < 0 {
			return fmt.Errorf("--%s must not be negative, got %d", name, n)
		}
	}
	if l.maxConns > 0 && l.maxStreams >= l.maxConns {
		return fmt.Errorf("--max-streams (%d) must be below --max-conns (%d): calls need connections that streams cannot take", l.maxStreams, l.maxConns)
	}
	if l.maxBody <= 0 || l.maxHeaderBytes <= 0 {
		return fmt.Errorf("--max-body and --max-header-bytes must be positive")
	}
	if l.maxInflightBytes != 0 && l.maxInflightBytes < l.maxBody {
		return fmt.Errorf("--max-inflight-bytes (%s) must be at least --max-body (%s), or 0", &l.maxInflightBytes, &l.maxBody)
	}
	return nil
}

// httpOptions adds the per-request limits to o.
func (l *httpLimits) httpOptions(o serve.HTTPOptions) serve.HTTPOptions {
	o.MaxSessions = l.maxSessions
	o.MaxInflight = l.maxInflight
	o.MaxBody = int64(l.maxBody)
	o.MaxInflightBytes = int64(l.maxInflightBytes)
	o.ReadTimeout = l.readTimeout
	o.WriteTimeout = l.writeTimeout
	return o
}

func (l *httpLimits) conn() serve.ConnLimits {
	return serve.ConnLimits{
		ReadHeaderTimeout: l.readHeaderTimeout,
		IdleTimeout:       l.idleTimeout,
		MaxHeaderBytes:    int(l.maxHeaderBytes),
		MaxConns:          l.maxConns,
	}
}

// httpServer returns the http.Server for h, with the connection limits.
func (l *httpLimits) httpServer(h http.Handler) *http.Server {
	return serve.NewHTTPServer(h, l.conn())
}

// listen listens on addr, accepting at most --max-conns connections at once.
func (l *httpLimits) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return serve.LimitListener(ln, l.conn()), nil
}

// byteSize is a flag of a number of bytes: 1048576, or with a binary
// suffix, 1MiB (also KiB and GiB).
type byteSize int64

func (b *byteSize) String() string {
	n := int64(*b)
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (b *byteSize) Set(s string) error {
	num, shift := strings.TrimSpace(s), uint(0)
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"B", 0}} {
		if strings.HasSuffix(num, u.suffix) {
			num, shift = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return fmt.Errorf("%q is not a size: give bytes, or a number with KiB, MiB or GiB (e.g. 4MiB)", s)
	}
	*b = byteSize(n << shift)
	return nil
}
