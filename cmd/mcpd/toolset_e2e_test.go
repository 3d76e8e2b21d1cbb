package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func exampleToolsets(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "toolsets", "tools.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func listedTools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(bounded(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// `mcpd serve --stdio --toolset support` on examples/toolsets: the client
// sees the support toolset alone, a tool outside it is unknown (-32602),
// and the audit line names the toolset.
func TestServeStdioToolset(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": exampleToolsets(t)})
	logPath := filepath.Join(t.TempDir(), "audit.log")
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cmd := mcpdCommand("serve", "--stdio", "-c", dir, "--toolset", "support", "--audit-log", logPath)
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
			}
			if got, want := listedTools(t, cs), []string{"search_tickets", "search_customers", "get_ticket"}; !slices.Equal(got, want) {
				t.Errorf("tools %v, want %v", got, want)
			}
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "get_ticket", Arguments: map[string]any{"id": 7}})
			if err != nil || res.IsError || !strings.Contains(textOf(res), "ticket #7") {
				t.Errorf("get_ticket: %v %v", res, err)
			}
			if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "close_ticket", Arguments: map[string]any{"id": 7}}); rpcCode(err) != -32602 || !strings.Contains(err.Error(), `unknown tool "close_ticket"`) {
				t.Errorf("close_ticket through the support toolset: %v, want -32602 unknown tool", err)
			}
			if _, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "helpdesk://runbook"}); err == nil {
				t.Error("the runbook is readable through the support toolset")
			}
			cs.Close()
			cmd.Wait()
		})
	}
	lines := readAudit(t, logPath)
	if len(lines) != 6 {
		t.Fatalf("%d audit lines, want 6", len(lines))
	}
	for _, l := range lines {
		if l["toolset"] != "support" {
			t.Errorf("audit line %v %v: toolset %v, want support", l["kind"], l["name"], l["toolset"])
		}
	}

	// A misspelt --toolset stops mcpd before it serves, with a did-you-mean.
	code, _, stderr := runBinary(t, "serve", "--stdio", "-c", dir, "--toolset", "suport")
	if code != 1 || !strings.Contains(stderr, `Did you mean "support"?`) {
		t.Errorf("--toolset suport: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runBinary(t, "serve", "-c", dir, "--toolset", "support")
	if code == 0 || !strings.Contains(stderr, "/mcp/support") {
		t.Errorf("--toolset without --stdio: exit %d, stderr %q", code, stderr)
	}
}

// Over HTTP with an auth block: /mcp/support needs the toolset's scope
// (403 with an insufficient_scope challenge without it), serves the
// toolset to a caller that holds it on both eras, and /metrics counts the
// calls per toolset.
func TestServeHTTPToolsetScopes(t *testing.T) {
	auth := `
auth {
  header = "X-Api-Key"
  api_key "agent" {
    value  = env("TOOLSET_AGENT_KEY")
    scopes = ["support"]
  }
  api_key "bot" {
    value  = env("TOOLSET_BOT_KEY")
    scopes = ["triage"]
  }
}
`
	dir := configDir(t, map[string]string{"tools.hcl": exampleToolsets(t), "auth.hcl": auth})
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir)
	cmd.Env = append(cmd.Env, "TOOLSET_AGENT_KEY=agent-key-123456", "TOOLSET_BOT_KEY=bot-key-123456")
	endpoint := startHTTP(t, cmd)
	base := strings.TrimSuffix(endpoint, "/mcp")
	withKey := func(key string) *http.Client {
		return &http.Client{Transport: keyTransport{"X-Api-Key", key, http.DefaultTransport}}
	}

	req, _ := http.NewRequest("POST", base+"/mcp/support", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := withKey("bot-key-123456").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if wa := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 403 || !strings.Contains(wa, `error="insufficient_scope"`) || !strings.Contains(wa, `scope="support"`) {
		t.Errorf("bot on /mcp/support: %d %q, want 403 with an insufficient_scope challenge for support", resp.StatusCode, wa)
	}

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "toolset-e2e", Version: "1"}, nil)
		cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: base + "/mcp/support", MaxRetries: -1, HTTPClient: withKey("agent-key-123456")}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%s: agent on /mcp/support: %v", version, err)
		}
		if got, want := listedTools(t, cs), []string{"search_tickets", "search_customers", "get_ticket"}; !slices.Equal(got, want) {
			t.Errorf("%s: tools %v, want %v", version, got, want)
		}
		if res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "search_tickets", Arguments: map[string]any{"text": "printer"}}); err != nil || res.IsError {
			t.Errorf("%s: search_tickets: %v %v", version, res, err)
		}
		cs.Close()
	}
	// The bot uses the triage toolset, which needs no scope of its own.
	client := mcp.NewClient(&mcp.Implementation{Name: "toolset-e2e", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: base + "/mcp/triage", MaxRetries: -1, HTTPClient: withKey("bot-key-123456")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := listedTools(t, cs), []string{"search_tickets", "search_customers", "get_ticket", "set_priority"}; !slices.Equal(got, want) {
		t.Errorf("triage: tools %v, want %v", got, want)
	}
	cs.Close()

	code, scrape := httpGet(t, base+"/metrics")
	if code != 200 || !strings.Contains(scrape, `mcpd_toolset_calls_total{kind="tool",outcome="ok",toolset="support"} 2`) {
		t.Errorf("/metrics: %d, no count of 2 support tool calls:\n%s", code, grepLines(scrape, "toolset"))
	}
}

// `mcpd list` names the toolsets with their paths; --toolset lists what
// one serves, in text and JSON; a misspelt one is an error with a
// did-you-mean; validate counts them.
func TestListToolsets(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": exampleToolsets(t)})
	r := runCLI(t, "list", "-c", dir)
	for _, want := range []string{
		"toolset support  /mcp/support  (3 tools, 1 resource, 1 prompt)  scopes: support\n",
		"toolset triage  /mcp/triage  (4 tools, 1 resource, 0 prompts)\n",
		"tool close_ticket(",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("list: missing %q in:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	r = runCLI(t, "list", "-c", dir, "--toolset", "support")
	if r.code != 0 || strings.Contains(r.stdout, "close_ticket") || strings.Contains(r.stdout, "set_priority") ||
		!strings.Contains(r.stdout, "tool get_ticket(id: integer)") || strings.Contains(r.stdout, "toolset ") || strings.Contains(r.stdout, "runbook") {
		t.Errorf("list --toolset support:\n%s%s", r.stdout, r.stderr)
	}
	r = runCLI(t, "list", "-c", dir, "--toolset", "triage", "--json")
	var out struct {
		Tools    []struct{ Name string } `json:"tools"`
		Toolsets []any                   `json:"toolsets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("list --json --toolset triage: %v\n%s%s", err, r.stdout, r.stderr)
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
	}
	if want := []string{"search_tickets", "search_customers", "get_ticket", "set_priority"}; !slices.Equal(names, want) || out.Toolsets != nil {
		t.Errorf("list --json --toolset triage: tools %v toolsets %v, want %v and no toolsets", names, out.Toolsets, want)
	}
	r = runCLI(t, "list", "-c", dir, "--json")
	var all struct {
		Toolsets []struct {
			Name, Path string
			Tools      []string
			Scopes     []string
		} `json:"toolsets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &all); err != nil || len(all.Toolsets) != 2 || all.Toolsets[0].Path != "/mcp/support" ||
		!slices.Equal(all.Toolsets[0].Tools, []string{"search_tickets", "search_customers", "get_ticket"}) || !slices.Equal(all.Toolsets[0].Scopes, []string{"support"}) {
		t.Errorf("list --json toolsets: %+v (%v)", all.Toolsets, err)
	}
	r = runCLI(t, "list", "-c", dir, "--toolset", "tirage")
	if r.code != 1 || !strings.Contains(r.stderr, `Did you mean "triage"?`) {
		t.Errorf("list --toolset tirage: %+v", r)
	}
	r = runCLI(t, "validate", "-c", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "2 toolsets)") {
		t.Errorf("validate: %+v", r)
	}
}

// client-config --toolset: the stdio command gets --toolset NAME, an HTTP
// URL the toolset's path.
func TestClientConfigToolset(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": exampleToolsets(t)})
	r := runCLI(t, "client-config", "--host", "cursor", "-c", dir, "--toolset", "support")
	if r.code != 0 || !strings.Contains(r.stdout, `"--toolset",`) || !strings.Contains(r.stdout, `"support"`) {
		t.Errorf("stdio: %+v", r)
	}
	r = runCLI(t, "client-config", "--host", "vscode", "--http", "https://mcp.example.com/mcp", "--toolset", "support")
	if r.code != 0 || !strings.Contains(r.stdout, `"url": "https://mcp.example.com/mcp/support"`) {
		t.Errorf("http: %+v", r)
	}
	r = runCLI(t, "client-config", "--host", "vscode", "--http", "https://mcp.example.com/other", "--toolset", "support")
	if r.code == 0 || !strings.Contains(r.stderr, "/mcp/support") {
		t.Errorf("http without /mcp: %+v", r)
	}
}

// The console of examples/toolsets in a real browser: the toolset picker
// lists the toolsets, picking one lists what its path serves, and a call
// made through a toolset's path shows which toolset it came through.
func TestConsoleToolsetInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" && os.Getenv("MCPD_TEST_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no Chromium found, and MCPD_TEST_REQUIRE_CHROMIUM=1: the console's browser test must run")
	}
	if bin == "" {
		t.Skip("no Chromium found (apt-get install chromium, or MCPD_TEST_CHROMIUM=/path/to/chrome)")
	}
	dir := configDir(t, map[string]string{"tools.hcl": exampleToolsets(t)})
	cmd := mcpdCommand("serve", "--ui", "--http", "127.0.0.1:0", "-c", dir)
	endpoint, _ := startHTTPLogs(t, cmd)
	ui := strings.TrimSuffix(endpoint, "mcp") + "ui/"
	b := browser(t, bin)
	step(t, b, "loading the console", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	waitFor(t, b, "the toolset picker", `!document.getElementById("toolset-pick").hidden && document.querySelectorAll("#toolset option").length === 3`)
	tools := func() []string {
		return eval[[]string](t, b, `[...document.querySelectorAll("#tools-list button")].map(b => b.dataset.id)`)
	}
	if got := tools(); len(got) != 5 {
		t.Errorf("everything: tools %v, want the 5 tools", got)
	}
	eval[bool](t, b, `(() => { const s = document.getElementById("toolset"); s.value = "support"; s.dispatchEvent(new Event("change")); return true })()`)
	waitFor(t, b, "the support toolset's tools", `document.querySelectorAll("#tools-list button").length === 3`)
	if got, want := tools(), []string{"search_tickets", "search_customers", "get_ticket"}; !slices.Equal(got, want) {
		t.Errorf("support: tools %v, want %v", got, want)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "console-toolset", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: endpoint + "/triage", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "set_priority", Arguments: map[string]any{"id": 3, "priority": "high"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "the call through triage", `document.querySelector('#calls tr[data-name="set_priority"]')`)
	if who := eval[string](t, b, `document.querySelector('#calls tr[data-name="set_priority"] .who').textContent`); !strings.Contains(who, "via triage") {
		t.Errorf("the call's row says %q, want it to name the triage toolset", who)
	}
}

// The real binary on stdio with --toolset, editing its config while it
// runs: an edit that changes the toolset's tools sends one
// tools/list_changed, one that changes only other tools sends none.
func TestStdioToolsetHotReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.hcl")
	tool := func(name, desc string) string {
		return "tool \"" + name + "\" {\n  description = \"" + desc + "\"\n  result {\n    content \"text\" {\n      text = \"ok\"\n    }\n  }\n}\n"
	}
	sets := "toolset \"a\" {\n  tools = [\"a_*\"]\n}\n"
	write := func(text string) {
		t.Helper()
		tmp := filepath.Join(dir, ".tools.hcl.swp")
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(tool("a_one", "A") + tool("b_one", "B") + sets)
	cmd := mcpdCommand("serve", "--stdio", "-c", path, "--toolset", "a", "--log-level", "warn")
	var changes atomic.Int64
	signal := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "toolset-reload", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changes.Add(1)
			signal <- struct{}{}
		},
	})
	ctx := bounded(t)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	time.Sleep(100 * time.Millisecond) // the watcher starts beside the session

	// Only b_one changes: not the toolset's business.
	write(tool("a_one", "A") + tool("b_one", "B changed") + sets)
	time.Sleep(1500 * time.Millisecond) // a window in which no notification may arrive
	if n := changes.Load(); n != 0 {
		t.Errorf("an edit outside the toolset sent %d notifications", n)
	}
	// a_two joins the toolset's pattern.
	write(tool("a_one", "A") + tool("a_two", "A2") + tool("b_one", "B changed") + sets)
	select {
	case <-signal:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after a tool joined the toolset")
	}
	time.Sleep(300 * time.Millisecond) // a window in which no second notification may arrive
	if n := changes.Load(); n != 1 {
		t.Errorf("%d notifications, want exactly 1", n)
	}
	if got := listedTools(t, cs); !slices.Equal(got, []string{"a_one", "a_two"}) {
		t.Errorf("tools after the reload: %v", got)
	}
}
