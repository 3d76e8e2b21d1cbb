package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/mcpadapter/mcptest"
	"github.com/mcpd/mcpd/internal/wait"
)

// The gateway tests put real MCP servers that mcpd did not write behind
// mcpd (issue #23): the reference server @modelcontextprotocol/server-
// everything, run by Node 22, and mcpd itself. Node and the server come
// from npm (.ci/run installs them into its cache before the test step and
// names them in MCPD_TEST_NODE and MCPD_TEST_EVERYTHING); without them the
// tests skip, unless MCPD_TEST_REQUIRE_UPSTREAM=1 (CI), where they fail.

// freePort returns a loopback port nothing listens on (for the Node
// server, which takes its port from $PORT and cannot report port 0).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP runs server-everything's Streamable HTTP transport
// and returns its endpoint once it answers.
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	node, script := mcptest.Everything(t)
	port := freePort(t)
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server-everything's output:\n%s", logs.String())
		}
	})
	wait.Until(t, fmt.Sprintf("server-everything listens on %d", port), func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// gatewayConfig exposes server-everything's tools one by one.
func gatewayConfig(server string) string {
	return server + `
tool "echo" {
  description = "Echo a message."
  param "message" {
    type = "string"
  }
  mcp {
    server = "everything"
  }
}

tool "shout" {
  description = "Echo a message, shaped by mcpd from the upstream's result."
  param "message" {
    type = "string"
  }
  mcp {
    server = "everything"
    tool   = "echo"
  }
  result {
    text       = "upper(text) + ' (' + string(len(content)) + ' block, ' + content[0].type + ')'"
    error_when = "is_error"
  }
}

tool "sum" {
  description = "Add two numbers."
  param "a" {
    type = "number"
  }
  param "b" {
    type    = "number"
  }
  mcp {
    server = "everything"
    tool   = "get-sum"
  }
}

tool "add_ten" {
  description = "Add ten to a number: b is fixed, the model never sees it."
  param "a" {
    type = "number"
  }
  mcp {
    server    = "everything"
    tool      = "get-sum"
    arguments = { b = 10 }
  }
}

tool "weather" {
  description = "Structured weather."
  param "location" {
    type = "string"
    enum = ["Chicago", "New York"]
  }
  mcp {
    server = "everything"
    tool   = "get-structured-content"
  }
}

tool "image" {
  description = "A tiny image."
  mcp {
    server = "everything"
    tool   = "get-tiny-image"
  }
}

tool "long" {
  description = "A long operation with progress."
  param "duration" {
    type = "number"
  }
  param "steps" {
    type = "number"
  }
  mcp {
    server = "everything"
    tool   = "trigger-long-running-operation"
  }
}

tool "slow" {
  description = "A long operation that mcpd's timeout cuts short."
  timeout     = "1s"
  mcp {
    server    = "everything"
    tool      = "trigger-long-running-operation"
    arguments = { duration = 20, steps = 2 }
  }
}

tool "missing" {
  description = "A tool the upstream does not have."
  mcp {
    server = "everything"
    tool   = "no-such-tool"
  }
}
`
}

func stdioServer(node, script string) string {
	return fmt.Sprintf(`
mcp_server "everything" {
  command = [%q, %q, "stdio"]
}
`, node, script)
}

func httpServer(url string) string {
	return fmt.Sprintf(`
mcp_server "everything" {
  url = %q
}
`, url)
}

// exerciseGateway calls the exposed tools through an mcpd client session.
func exerciseGateway(t *testing.T, cs *mcp.ClientSession, progress *progressRecorder) {
	ctx := bounded(t)
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		params := &mcp.CallToolParams{Name: name, Arguments: args}
		if name == "long" {
			params.SetProgressToken("p1")
		}
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	if res := call("echo", map[string]any{"message": "hi"}); res.IsError || textOf(res) != "Echo: hi" {
		t.Errorf("echo: %+v %q", res.IsError, textOf(res))
	}
	// A result block reads the upstream's result (text, content, is_error).
	if res := call("shout", map[string]any{"message": "hi"}); res.IsError || textOf(res) != "ECHO: HI (1 block, text)" {
		t.Errorf("shout: %+v %q", res.IsError, textOf(res))
	}
	if res := call("sum", map[string]any{"a": 2, "b": 3}); res.IsError || !strings.Contains(textOf(res), "5") {
		t.Errorf("sum: %q", textOf(res))
	}
	if res := call("add_ten", map[string]any{"a": 2}); res.IsError || !strings.Contains(textOf(res), "12") {
		t.Errorf("add_ten: %q", textOf(res))
	}
	// b is not the model's to set: the schema mcpd serves has no b.
	if res := call("add_ten", map[string]any{"a": 2, "b": 1}); !res.IsError {
		t.Errorf("add_ten with b: want a tool error, got %q", textOf(res))
	}
	res := call("weather", map[string]any{"location": "Chicago"})
	if m, ok := res.StructuredContent.(map[string]any); res.IsError || !ok || m["temperature"] == nil {
		t.Errorf("weather: structured %v, text %q", res.StructuredContent, textOf(res))
	}
	res = call("image", nil)
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if i, ok := c.(*mcp.ImageContent); ok {
			img = i
		}
	}
	if img == nil || img.MIMEType != "image/png" || len(img.Data) == 0 {
		t.Errorf("image: no PNG content in %d blocks", len(res.Content))
	}
	res = call("long", map[string]any{"duration": 1.5, "steps": 3})
	if res.IsError || !strings.Contains(textOf(res), "completed") {
		t.Errorf("long: %q", textOf(res))
	}
	// The last step's notification may race the result (the SDK handles
	// notifications and responses on different goroutines): at least the
	// ones before it arrive.
	if got := progress.values(); len(got) < 2 {
		t.Errorf("progress relayed: %v, want at least 2 of 3 notifications", got)
	}
	start := time.Now()
	res = call("slow", nil)
	if !res.IsError || !strings.Contains(textOf(res), "timed out") {
		t.Errorf("slow: want a timeout tool error, got %v %q", res.IsError, textOf(res))
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("slow took %s: mcpd's 1s timeout did not end the upstream call", took)
	}
	res = call("missing", nil)
	if !res.IsError || !strings.Contains(textOf(res), "no-such-tool") {
		t.Errorf("missing: want a tool error naming the tool, got %v %q", res.IsError, textOf(res))
	}
}

// mcpd over stdio in front of server-everything over stdio and over
// Streamable HTTP: listing, calling (text, structured, image), fixed
// arguments, progress, mcpd's timeout, an unknown upstream tool.
func TestGatewayEverything(t *testing.T) {
	node, script := mcptest.Everything(t)
	for _, tc := range []struct{ name, server string }{
		{"stdio", stdioServer(node, script)},
		{"http", httpServer(startEverythingHTTP(t))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := configDir(t, map[string]string{"tools.hcl": gatewayConfig(tc.server)})
			progress := newProgressRecorder()
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: progress.handler})
			cmd := mcpdCommand("serve", "--stdio", "-c", dir)
			logs := &lockedBuffer{}
			cmd.Stderr = logs
			cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, logs.String())
			}
			defer cs.Close()
			tools, err := cs.ListTools(bounded(t), nil)
			if err != nil || len(tools.Tools) != 9 {
				t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
			}
			exerciseGateway(t, cs, progress)
			if t.Failed() {
				t.Logf("mcpd log:\n%s", logs.String())
			}
		})
	}
}

var _ = sync.Mutex{}
var _ = context.Background

// upstreamTool is a declarative tool of the mcpd that plays the upstream.
func upstreamTool(name string) string {
	return fmt.Sprintf(`
tool %q {
  description = "Upstream tool %s."
  param "x" {
    type = "string"
  }
  result {
    structured = "{tool: '%s', x: args.x}"
  }
}
`, name, name, name)
}

// listChanges counts notifications/tools/list_changed and keeps when the
// first arrived.
type listChanges struct {
	mu    sync.Mutex
	n     int
	times []time.Time
}

func (l *listChanges) handler(context.Context, *mcp.ToolListChangedRequest) {
	l.mu.Lock()
	l.n++
	l.times = append(l.times, time.Now())
	l.mu.Unlock()
}

func (l *listChanges) count() (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return 0, time.Time{}
	}
	return l.n, l.times[l.n-1]
}

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	res, err := cs.ListTools(bounded(t), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	names := map[string]bool{}
	for _, tl := range res.Tools {
		names[tl.Name] = true
	}
	return names
}

// mcpd in front of mcpd, the upstream spoken to in each protocol era:
// tools exposed in bulk (prefix, exclude), a call through both, and an
// upstream whose tool list changes. The upstream's list_changed reaches
// the gateway's clients once each, on stdio, the legacy GET stream and
// subscriptions/listen; the time from the upstream's notification (seen
// by a client of the upstream) to the gateway's is logged.
func TestGatewayMCPDUpstreamListChanged(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			upDir := configDir(t, map[string]string{"tools.hcl": upstreamTool("alpha") + upstreamTool("beta") + upstreamTool("secret")})
			upURL := startHTTP(t, mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", upDir))
			gwDir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
mcp_server "up" {
  url              = %q
  protocol_version = %q
  expose {
    prefix  = "up_"
    exclude = ["secret"]
    descriptions = { alpha = "The author's alpha." }
  }
}

tool "local" {
  description = "A tool of the gateway's own."
  result {
    content "text" {
      text = "local"
    }
  }
}
`, upURL, era)})
			gwURL := startHTTP(t, mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", gwDir, "--ready-check-backends"))

			// Clients of the gateway: stdio (a second gateway process on the
			// same config), HTTP legacy (GET stream), HTTP modern (listen).
			type gwClient struct {
				name    string
				cs      *mcp.ClientSession
				changes *listChanges
			}
			var clients []gwClient
			connect := func(name string, tr mcp.Transport, version string) {
				lc := &listChanges{}
				c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: lc.handler})
				var opts *mcp.ClientSessionOptions
				if version != "" {
					opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
				}
				cs, err := c.Connect(bounded(t), tr, opts)
				if err != nil {
					t.Fatalf("%s: connect: %v", name, err)
				}
				t.Cleanup(func() { cs.Close() })
				clients = append(clients, gwClient{name, cs, lc})
			}
			connect("stdio", &mcp.CommandTransport{Command: mcpdCommand("serve", "--stdio", "-c", gwDir)}, "")
			connect("http-legacy", &mcp.StreamableClientTransport{Endpoint: gwURL}, "2025-11-25")
			connect("http-modern", &mcp.StreamableClientTransport{Endpoint: gwURL}, "2026-07-28")

			// Before the first listing the expose block contributes
			// nothing; the listing arrives in the background.
			for _, c := range clients {
				wait.Until(t, c.name+" sees up_alpha", func() bool { return toolNames(t, c.cs)["up_alpha"] })
				names := toolNames(t, c.cs)
				if !names["local"] || !names["up_beta"] || names["up_secret"] || names["secret"] {
					t.Fatalf("%s: tools %v", c.name, names)
				}
			}
			res, err := clients[0].cs.ListTools(bounded(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range res.Tools {
				if tl.Name == "up_alpha" && tl.Description != "The author's alpha." {
					t.Errorf("up_alpha's description: %q", tl.Description)
				}
			}
			for _, c := range clients {
				r, err := c.cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_beta", Arguments: map[string]any{"x": "hello"}})
				if err != nil {
					t.Fatalf("%s: call: %v", c.name, err)
				}
				if m, _ := r.StructuredContent.(map[string]any); r.IsError || m["tool"] != "beta" || m["x"] != "hello" {
					t.Errorf("%s: up_beta: %v %q", c.name, r.StructuredContent, textOf(r))
				}
			}

			// /metrics and /readyz report the upstream.
			base := strings.TrimSuffix(gwURL, "/mcp")
			if code, body := httpGet(t, base+"/metrics"); code != 200 || !strings.Contains(body, `mcpd_upstream_up{state="up",transport="http",upstream="up"} 1`) || !strings.Contains(body, `mcpd_upstream_tools{transport="http",upstream="up"} 3`) {
				t.Errorf("/metrics: %d, no upstream gauges:\n%s", code, grepLines(body, "mcpd_upstream"))
			}
			if code, body := httpGet(t, base+"/readyz"); code != 200 {
				t.Errorf("/readyz: %d %s", code, body)
			}

			// A direct client of the upstream times its notification.
			direct := &listChanges{}
			dc := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: direct.handler})
			dcs, err := dc.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: upURL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer dcs.Close()
			time.Sleep(300 * time.Millisecond) // the streams are open

			before := make([]int, len(clients))
			for i, c := range clients {
				before[i], _ = c.changes.count()
			}
			if err := os.WriteFile(filepath.Join(upDir, "more.hcl"), []byte(upstreamTool("gamma")), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, c := range clients {
				wait.Until(t, c.name+" sees up_gamma", func() bool { return toolNames(t, c.cs)["up_gamma"] })
			}
			time.Sleep(time.Second) // a second notification would have come by now
			_, upAt := direct.count()
			for i, c := range clients {
				n, at := c.changes.count()
				if n-before[i] != 1 {
					t.Errorf("%s: %d list_changed notifications, want exactly 1", c.name, n-before[i])
				}
				if !upAt.IsZero() && !at.IsZero() {
					t.Logf("%s: list_changed %s after the upstream's", c.name, at.Sub(upAt).Round(time.Millisecond))
				}
			}
		})
	}
}

// programsOf lists the programs mcpd pid started: the children of its
// process supervisor (engine/proc), which is its child.
func programsOf(pid int) []int {
	var out []int
	for _, sup := range childrenOf(pid) {
		out = append(out, childrenOf(sup)...)
	}
	return out
}

// childrenOf returns the PIDs whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid, self int
		fmt.Sscanf(e.Name(), "%d", &self)
		if _, err := fmt.Sscanf(s[i+2:], "%s %d", &state, &ppid); err == nil && ppid == pid && state != "Z" {
			out = append(out, self)
		}
	}
	return out
}

// A stdio upstream is supervised: killed, it is started again (calls in
// between fail as tool errors, never as protocol errors), and removing its
// block from the config stops it.
func TestGatewayUpstreamRestartAndRemoval(t *testing.T) {
	node, script := mcptest.Everything(t)
	cfg := fmt.Sprintf(`
mcp_server "everything" {
  command = [%q, %q, "stdio"]
  start   = "load"
}

tool "echo" {
  description = "Echo a message."
  param "message" {
    type = "string"
  }
  mcp {
    server = "everything"
  }
}
`, node, script)
	dir := configDir(t, map[string]string{"tools.hcl": cfg})
	cmd := mcpdCommand("serve", "--stdio", "-c", dir)
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	echo := func() *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}})
		if err != nil {
			t.Fatalf("echo: a protocol error: %v", err)
		}
		return res
	}
	if res := echo(); res.IsError {
		t.Fatalf("echo: %q\n%s", textOf(res), logs.String())
	}
	var first []int
	wait.Until(t, "the upstream's process", func() bool { first = programsOf(cmd.Process.Pid); return len(first) == 1 })
	if err := syscallKill(first[0]); err != nil {
		t.Fatal(err)
	}
	// Right after the kill a call fails cleanly or, once restarted,
	// succeeds; it never hangs past connect_timeout.
	res := echo()
	t.Logf("right after the kill: isError=%v %q", res.IsError, textOf(res))
	defer func() {
		if t.Failed() {
			t.Logf("mcpd log:\n%s", logs.String())
		}
	}()
	wait.Until(t, "the upstream restarted", func() bool {
		kids := programsOf(cmd.Process.Pid)
		return len(kids) == 1 && kids[0] != first[0] && !echo().IsError
	})
	if !strings.Contains(logs.String(), "upstream connection ended; reconnecting") {
		t.Errorf("the log does not say the upstream is being restarted:\n%s", logs.String())
	}
	// Reload without the block: the upstream stops.
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(upstreamTool("alone")), 0o644); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the upstream stopped after its block was removed", func() bool { return len(programsOf(cmd.Process.Pid)) == 0 })
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// server-everything exposed in bulk over stdio: its tools with a prefix
// and an exclude list, its resources, templates and prompts; reads and
// prompt gets pass through.
func TestGatewayEverythingBulk(t *testing.T) {
	node, script := mcptest.Everything(t)
	dir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
mcp_server "everything" {
  command = [%q, %q, "stdio"]
  expose {
    prefix    = "ev_"
    exclude   = ["*elicitation*", "*sampling*", "toggle-*"]
    resources = true
    prompts   = true
  }
}
`, node, script)})
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cmd := mcpdCommand("serve", "--stdio", "-c", dir)
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	defer func() {
		if t.Failed() {
			t.Logf("mcpd log:\n%s", logs.String())
		}
	}()
	wait.Until(t, "the upstream's tools", func() bool { return toolNames(t, cs)["ev_echo"] })
	names := toolNames(t, cs)
	if !names["ev_get-sum"] || names["ev_toggle-simulated-logging"] || names["echo"] {
		t.Errorf("tools: %v", names)
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ev_get-sum", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "3") {
		t.Errorf("ev_get-sum: %v %q", err, textOf(res))
	}
	// The schema is the upstream's: get-sum wants numbers.
	res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ev_get-sum", Arguments: map[string]any{"a": "one", "b": 2}})
	if err != nil || !res.IsError {
		t.Errorf("ev_get-sum with a string: %v %v %q", err, res.IsError, textOf(res))
	}

	rs, err := cs.ListResources(bounded(t), nil)
	if err != nil || len(rs.Resources) == 0 {
		t.Fatalf("resources/list: %v (%d)", err, len(rs.Resources))
	}
	rr, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: rs.Resources[0].URI})
	if err != nil || len(rr.Contents) == 0 {
		t.Errorf("read %s: %v", rs.Resources[0].URI, err)
	}
	tpls, err := cs.ListResourceTemplates(bounded(t), nil)
	if err != nil || len(tpls.ResourceTemplates) == 0 {
		t.Fatalf("resources/templates/list: %v", err)
	}
	rr, err = cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/7"})
	if err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text, "Resource 7") {
		t.Errorf("read a template instance: %v %+v", err, rr)
	}
	ps, err := cs.ListPrompts(bounded(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range ps.Prompts {
		found = found || p.Name == "ev_args-prompt"
	}
	if !found {
		t.Fatalf("prompts: no ev_args-prompt in %d", len(ps.Prompts))
	}
	pr, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "ev_args-prompt", Arguments: map[string]string{"city": "Paris"}})
	if err != nil || len(pr.Messages) == 0 {
		t.Fatalf("prompts/get: %v", err)
	}
	if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "Paris") {
		t.Errorf("prompt text: %+v", pr.Messages[0].Content)
	}
}

// A 2026-07-28 upstream on stdio holds all of mcpd's subscriptions/listen
// streams on one session, and the go-sdk server drops the session's
// list_changed subscription when any of them ends: a gateway client that
// subscribes to an upstream resource and unsubscribes must not silence
// the upstream's later list changes (the gateway keeps the resource's
// stream open; adapters/mcpadapter/forward.go).
func TestGatewayStdioUpstreamUnsubscribeKeepsListChanged(t *testing.T) {
	upDir := configDir(t, map[string]string{"tools.hcl": upstreamTool("alpha") + `
resource "notes" {
  uri  = "notes://today"
  text = "Nothing yet."
}
`})
	gwDir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
mcp_server "up" {
  command = [%q, "serve", "--stdio", "-c", %q]
  expose {
    resources = true
  }
}
`, mcpdBin, upDir)})
	lc := &listChanges{}
	c := mcp.NewClient(&mcp.Implementation{Name: "sub", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: lc.handler})
	cs, err := c.Connect(bounded(t), &mcp.CommandTransport{Command: mcpdCommand("serve", "--stdio", "-c", gwDir)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	wait.Until(t, "the gateway lists alpha", func() bool { return toolNames(t, cs)["alpha"] })
	if err := cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: "notes://today"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := cs.Unsubscribe(bounded(t), &mcp.UnsubscribeParams{URI: "notes://today"}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // the upstream's listen stream would have ended by now
	before, _ := lc.count()
	if err := os.WriteFile(filepath.Join(upDir, "more.hcl"), []byte(upstreamTool("beta")), 0o644); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the client is told of beta", func() bool { n, _ := lc.count(); return n > before })
	if !toolNames(t, cs)["beta"] {
		t.Errorf("tools after the upstream's change: %v", toolNames(t, cs))
	}
}
