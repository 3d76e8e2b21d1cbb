package reload_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectTo connects a client of kind (stdio, legacy-http, modern-http) to
// the endpoint of toolset: /mcp/<toolset> over HTTP, the toolset's server
// in process for stdio.
func (e *env) connectTo(kind, toolset string) *client {
	e.t.Helper()
	c := &client{name: kind + " " + toolset, signal: make(chan struct{}, 100)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-" + kind, Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.changes.Add(1)
			c.signal <- struct{}{}
		},
	})
	ctx := context.Background()
	url := e.http.URL + "/mcp"
	if toolset != "" {
		url += "/" + toolset
	}
	var err error
	switch kind {
	case "stdio":
		srv, serr := e.srv.SDKFor(toolset)
		if serr != nil {
			e.t.Fatal(serr)
		}
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			e.t.Fatal(err)
		}
		c.session, err = cl.Connect(ctx, ct, nil)
	case "legacy-http":
		c.session, err = cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	case "modern-http":
		c.session, err = cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	}
	if err != nil {
		e.t.Fatalf("connecting %s: %v", c.name, err)
	}
	e.t.Cleanup(func() { c.session.Close() })
	return c
}

// A reload notifies exactly the clients whose visible list changed: one
// tools/list_changed to each client of an endpoint (/mcp, /mcp/a, /mcp/b)
// whose tools changed, none to the others, on stdio, the legacy GET stream
// and subscriptions/listen alike.
func TestToolsetReloadNotifiesOnlyChangedToolsets(t *testing.T) {
	base := tool("a_one", "A1") + tool("a_two", "A2") + tool("b_one", "B1")
	sets := "toolset \"a\" {\n  tools = [\"a_*\"]\n}\ntoolset \"b\" {\n  tools = [\"b_*\"]\n}\n"
	e := start(t, map[string]string{"tools.hcl": base + sets}, func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} })
	clients := map[string][]*client{}
	streams := e.srv.StreamCount()
	for _, ts := range []string{"", "a", "b"} {
		for _, kind := range []string{"stdio", "legacy-http", "modern-http"} {
			clients[ts] = append(clients[ts], e.connectTo(kind, ts))
		}
		streams += 2
	}
	// The HTTP clients' streams open in the background.
	e.streamsOpen(streams)

	wantTools := func(ts string, want ...string) {
		t.Helper()
		for _, c := range clients[ts] {
			if got := toolNames(t, c); !slices.Equal(got, want) {
				t.Errorf("%s: tools %v, want %v", c.name, got, want)
			}
		}
	}
	wantTools("", "a_one", "a_two", "b_one")
	wantTools("a", "a_one", "a_two")
	wantTools("b", "b_one")

	steps := []struct {
		name     string
		config   string
		notified []string // endpoints whose clients get exactly one
		quiet    []string // endpoints whose clients get none
	}{
		{"a tool added to a's pattern", base + tool("a_three", "A3") + sets, []string{"", "a"}, []string{"b"}},
		{"b's tool changed", tool("a_one", "A1") + tool("a_two", "A2") + tool("b_one", "B1 changed") + tool("a_three", "A3") + sets, []string{"", "b"}, []string{"a"}},
		{"toolset a takes b_one too", tool("a_one", "A1") + tool("a_two", "A2") + tool("b_one", "B1 changed") + tool("a_three", "A3") +
			"toolset \"a\" {\n  tools = [\"a_*\", \"b_one\"]\n}\ntoolset \"b\" {\n  tools = [\"b_*\"]\n}\n", []string{"a"}, []string{"", "b"}},
		{"toolset b removed", tool("a_one", "A1") + tool("a_two", "A2") + tool("b_one", "B1 changed") + tool("a_three", "A3") +
			"toolset \"a\" {\n  tools = [\"a_*\", \"b_one\"]\n}\n", []string{"b"}, []string{"", "a"}},
	}
	for _, st := range steps {
		write(t, filepath.Join(e.dir, "tools.hcl"), st.config)
		if err := e.reloader.Reload(context.Background()); err != nil {
			t.Fatalf("%s: reload: %v", st.name, err)
		}
		var notified []*client
		for _, ts := range st.notified {
			notified = append(notified, clients[ts]...)
		}
		expectOne(t, notified)
		for _, ts := range st.quiet {
			for _, c := range clients[ts] {
				if n := c.changes.Load(); n != 0 {
					t.Errorf("%s: %s: got %d tools/list_changed, want none (its tools did not change)", st.name, c.name, n)
				}
			}
		}
	}
	wantTools("a", "a_one", "a_two", "b_one", "a_three")
	wantTools("", "a_one", "a_two", "b_one", "a_three")
	// The removed toolset's clients see nothing (HTTP: its path is gone).
	for _, c := range clients["b"] {
		res, err := c.session.ListTools(context.Background(), nil)
		if err == nil && len(res.Tools) > 0 {
			t.Errorf("%s: a removed toolset still lists %d tools", c.name, len(res.Tools))
		}
	}
}
