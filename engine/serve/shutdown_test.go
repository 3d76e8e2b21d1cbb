package serve_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// Shutdown does the whole sequence a caller used to order by hand: the
// server stops being ready at once; a call in flight past the grace period
// is answered with a tool error saying the server is shutting down; the
// open notification streams end; the HTTP server stops, its Serve
// returning http.ErrServerClosed; Shutdown returns nil, every request read
// having been answered, and a second call returns the same.
func TestShutdown(t *testing.T) {
	e := newEnv(t)
	e.srv = serve.New(e.cur, serve.Options{Logger: quiet, ShutdownGrace: 300 * time.Millisecond, AnswerWait: 5 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := serve.NewHTTPServer(e.srv.HTTPHandler(serve.HTTPOptions{}), serve.ConnLimits{})
	served := make(chan error, 1)
	go func() { served <- e.srv.ServeHTTPServer(hs, ln) }()
	url := "http://" + ln.Addr().String()
	t.Cleanup(e.fake.releaseAll)

	listens := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, legacy, listens)
	listen := do(t, fresh(), streamRequest(t, "POST", url, "", listenBody, map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "subscriptions/listen"}))
	if !isOpenStream(listen) {
		t.Fatalf("listen: %d", listen.StatusCode)
	}
	answer := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "slow"})
		if err != nil {
			t.Errorf("the slow call got no answer: %v", err)
		}
		answer <- res
	}()
	waitFor(t, e.fake.started, "slow call")
	if !e.srv.Ready() {
		t.Fatal("not ready before the shutdown")
	}

	shut := make(chan error, 1)
	go func() { shut <- e.srv.Shutdown(context.Background()) }()
	wait.Until(t, "not ready once Shutdown began", func() bool { return !e.srv.Ready() })
	if res := <-answer; res == nil || !res.IsError || !strings.Contains(text(res), "shutting down") {
		t.Errorf("the call past the grace period: %+v", res)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("ServeHTTPServer returned %v, want http.ErrServerClosed", err)
	}
	// The listen stream was ended by the server.
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, listen.Body)
		ended <- err
	}()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Error("the listen stream is still open after Shutdown")
	}
	if err := e.srv.Shutdown(context.Background()); err != nil {
		t.Errorf("a second Shutdown: %v", err)
	}
}
