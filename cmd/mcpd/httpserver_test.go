package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The limit flags have their stated defaults, are read from MCPD_*, and
// refuse values that are not sizes or are negative.
func TestHTTPLimitFlags(t *testing.T) {
	clearEnv(t)
	parseLimits := func(args ...string) (*httpLimits, error) {
		fs, _ := newFlagSet("serve", io.Discard)
		l := addHTTPLimitFlags(fs)
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		return l, l.check()
	}
	l, err := parseLimits()
	if err != nil {
		t.Fatal(err)
	}
	want := httpLimits{
		readHeaderTimeout: 10 * time.Second, readTimeout: 30 * time.Second, writeTimeout: 30 * time.Second,
		idleTimeout: 60 * time.Second, maxHeaderBytes: 64 << 10, maxBody: 4 << 20, maxInflightBytes: 64 << 20, maxOutputBudget: 256 << 20,
		maxConns: 1024, maxInflight: 64, maxSessions: 1000, maxCallerStreams: 32,
	}
	if *l != want {
		t.Errorf("defaults %+v, want %+v", *l, want)
	}
	// Streams get half the connections unless told otherwise.
	if got := l.streams(); got.PerCaller != 32 || got.Max != 512 {
		t.Errorf("default stream limits %+v, want 32 per caller and 512", got)
	}
	if l, err := parseLimits("--max-conns", "0"); err != nil || l.streams().Max != 0 {
		t.Errorf("--max-conns 0: %v, stream limits %+v, want no total", err, l.streams())
	}
	if l, err := parseLimits("--max-streams", "100", "--max-streams-per-caller", "0"); err != nil || l.streams().Max != 100 || l.streams().PerCaller != 0 {
		t.Errorf("--max-streams 100: %v, %+v", err, l.streams())
	}

	t.Setenv("MCPD_MAX_BODY", "1MiB")
	t.Setenv("MCPD_WRITE_TIMEOUT", "5s")
	l, err = parseLimits("--max-sessions", "5", "--max-header-bytes", "8192")
	if err != nil {
		t.Fatal(err)
	}
	if l.maxBody != 1<<20 || l.writeTimeout != 5*time.Second || l.maxSessions != 5 || l.maxHeaderBytes != 8192 {
		t.Errorf("from flags and MCPD_*: %+v", *l)
	}

	for _, bad := range [][]string{
		{"--max-body", "4MB"},
		{"--max-body", "-1"},
		{"--max-body", "0"},
		{"--max-inflight", "-1"},
		{"--idle-timeout", "-1s"},
		{"--max-inflight-bytes", "512KiB"}, // less than --max-body (MCPD_MAX_BODY)
		{"--max-streams", "1024"},          // calls would keep no connection
		{"--max-streams", "-1"},
		{"--max-streams-per-caller", "-1"},
	} {
		if _, err := parseLimits(bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// The limits reach the running server: a body over --max-body gets 413, and
// an idle keep-alive connection is closed after --idle-timeout (given in
// the environment).
func TestServeHTTPLimits(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": e2eConfig})
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir, "--max-body", "1KiB")
	cmd.Env = append(cmd.Env, "MCPD_IDLE_TIMEOUT=300ms")
	endpoint := startHTTP(t, cmd)
	u, _ := url.Parse(endpoint)

	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	send := func(body string) *http.Response {
		t.Helper()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	if resp := send(init); resp.StatusCode != 200 {
		t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	padded := strings.Replace(init, `"raw"`, `"`+strings.Repeat("r", 2048)+`"`, 1)
	if resp := send(padded); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 KiB body with --max-body 1KiB: status %d, want 413", resp.StatusCode)
	}

	// The 413 closed that connection; a new one, after one request.
	conn, err = net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	br = bufio.NewReader(conn)
	if resp := send(init); resp.StatusCode != 200 {
		t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	start := time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: %v, want EOF", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("idle connection closed after %v, want about 300ms", took)
	}
}
