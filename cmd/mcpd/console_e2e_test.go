package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// chromium finds the browser the console tests drive: $MCPD_TEST_CHROMIUM, or
// Debian's chromium on the PATH (.ci/run installs it).
func chromium() string {
	if p := os.Getenv("MCPD_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactsDir is where the console tests leave their screenshots for a
// reviewer: $MCPD_TEST_ARTIFACTS/console, or ci-artifacts/console at the
// repository's root (git-ignored).
func artifactsDir(t *testing.T) string {
	root := os.Getenv("MCPD_TEST_ARTIFACTS")
	if root == "" {
		root = filepath.Join("..", "..", "ci-artifacts")
	}
	dir := filepath.Join(root, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts a headless Chromium at a laptop's screen size and fails
// the test on any uncaught exception or console.error in a page (a CSP
// violation is one).
func browser(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.WindowSize(1280, 800),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-gpu", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", bin, err)
	}
	var mu sync.Mutex
	var exceptions []string
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				mu.Lock()
				exceptions = append(exceptions, "console.error: "+strings.Join(parts, " "))
				mu.Unlock()
			}
		case *runtime.EventExceptionThrown:
			mu.Lock()
			d := ev.ExceptionDetails
			msg := fmt.Sprintf("%s (%s:%d:%d)", d.Text, d.URL, d.LineNumber+1, d.ColumnNumber+1)
			if d.Exception != nil {
				msg += ": " + d.Exception.Description
			}
			exceptions = append(exceptions, msg)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("in the console page: %s", e)
		}
	})
	return ctx
}

// step runs actions with a bound, so that a console that never shows what
// is waited for fails the test instead of hanging it.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript expression until it is truthy.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(sctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// The console of `mcpd serve --ui` in a real browser, against the real
// binary running the repository's default config (tools.hcl and its SQLite
// bookshop) from a temporary directory: the page lists the config's tools;
// a form filled and submitted with the keyboard calls a tool and shows its
// result; a bad argument shows the tool error; breaking the config file
// shows the diagnostic with its line, live, and fixing it clears it; a call
// made by another MCP client appears among the recent calls. The console's
// own calls are labelled client=console in the log and the audit log.
func TestConsoleInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" && os.Getenv("MCPD_TEST_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no Chromium found, and MCPD_TEST_REQUIRE_CHROMIUM=1 (.ci/run sets it when it installed chromium): the console's browser test must run")
	}
	if bin == "" {
		t.Skip("no Chromium found: the console's browser tests need Debian's chromium package (apt-get install chromium; .ci/run installs it) or MCPD_TEST_CHROMIUM=/path/to/chrome")
	}
	shots := artifactsDir(t)

	dir := t.TempDir()
	original, err := os.ReadFile(filepath.Join("..", "..", "tools.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile(filepath.Join("..", "..", "demo", "seed.sql"))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "tools.hcl")
	if err := os.MkdirAll(filepath.Join(dir, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "demo", "seed.sql"), seed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, original, 0o644); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit.jsonl")
	// Relative, as a config author runs it from the config's directory.
	cmd := mcpdCommand("serve", "--ui", "--http", "127.0.0.1:0", "-c", "tools.hcl", "--audit-log", auditPath)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "MCPD_DATA_DIR="+filepath.Join(dir, ".mcpd"))
	endpoint, logs := startHTTPLogs(t, cmd)
	ui := strings.TrimSuffix(endpoint, "mcp") + "ui/"

	// What another client sees: the console must list the same tools.
	ctx := bounded(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "console-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tl := range lt.Tools {
		want = append(want, tl.Name)
	}
	if !slices.Contains(want, "list_books") || !slices.Contains(want, "word_count") {
		t.Fatalf("the default config's tools changed: %v; update this test", want)
	}

	b := browser(t, bin)

	// 1. The page loads and lists the config's tools.
	step(t, b, "loading the console", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	waitFor(t, b, "the config status", `document.getElementById("generation")?.textContent === "1"`)
	got := eval[[]string](t, b, `[...document.querySelectorAll("#tools-list button")].map(b => b.dataset.id)`)
	if !slices.Equal(got, want) {
		t.Errorf("console lists tools %v, want %v", got, want)
	}
	files := eval[string](t, b, `document.querySelector("#config-facts .files").textContent`)
	if !strings.Contains(files, "tools.hcl") {
		t.Errorf("config files shown: %q", files)
	}
	screenshot(t, b, shots, "01-loaded")

	// 2. A form generated from list_books' schema (an enum as a select, an
	// integer with a default), submitted with Enter, shows the rows.
	// With the keyboard: "/" goes to the filter; typing and Enter opens
	// the first match and puts the cursor in its form. (chromedp sends a
	// key's character apart from its keydown, so the "/" the page
	// swallowed lands in the filter: cleared before typing.)
	step(t, b, "pressing /", chromedp.KeyEvent("/"))
	if id := eval[string](t, b, `document.activeElement.id`); id != "filter" {
		t.Errorf("after /, the focus is on %q, want the filter", id)
	}
	eval[bool](t, b, `(document.getElementById("filter").value = "") === ""`)
	step(t, b, "opening list_books from the keyboard",
		chromedp.KeyEvent("list_bo"),
		chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS(`#call-form`)),
	)
	if f := eval[string](t, b, `document.activeElement.name`); f != "genre" {
		t.Errorf("focus after opening a tool is on %q, want its first field", f)
	}
	eval[bool](t, b, `(() => { const f = document.getElementById("filter"); f.value = ""; f.dispatchEvent(new Event("input")); return true })()`)
	if def := eval[string](t, b, `document.querySelector('#call-form input[name="limit"]').value`); def != "20" {
		t.Errorf("limit's default in the form = %q, want 20", def)
	}
	if kind := eval[string](t, b, `document.querySelector('#call-form [name="genre"]').tagName`); kind != "SELECT" {
		t.Errorf("genre (an enum) is a %s, want a SELECT", kind)
	}
	step(t, b, "filling the form",
		chromedp.SetValue(chromedp.CSS(`#call-form select[name="genre"]`), `"fiction"`),
		chromedp.SetValue(chromedp.CSS(`#call-form input[name="limit"]`), "50"),
		chromedp.Focus(chromedp.CSS(`#call-form input[name="limit"]`)),
		chromedp.KeyEvent("\r"),
	)
	waitFor(t, b, "the tool's result", `document.querySelector(".result.ok .outcome")`)
	result := eval[string](t, b, `document.querySelector(".result").innerText`)
	if !strings.Contains(result, "Invisible Cities") || strings.Contains(result, "The Dispossessed") {
		t.Errorf("list_books(genre=fiction) shows:\n%s", result)
	}
	if !strings.Contains(result, " ms") {
		t.Errorf("the result shows no duration:\n%s", result)
	}
	screenshot(t, b, shots, "02-tool-result")

	// 3. A bad argument: the tool error the model would get, highlighted.
	step(t, b, "calling with a bad argument",
		chromedp.SetValue(chromedp.CSS(`#call-form input[name="limit"]`), "1000"),
		chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)),
	)
	waitFor(t, b, "the tool error", `document.querySelector(".result.bad .outcome")`)
	errText := eval[string](t, b, `document.querySelector(".result.bad").innerText`)
	if !strings.Contains(errText, "isError") || !strings.Contains(errText, "limit") {
		t.Errorf("the tool error shows:\n%s", errText)
	}
	screenshot(t, b, shots, "03-tool-error")

	// 4. A broken edit: the diagnostic appears, with its file and line,
	// without reloading the page.
	broken := string(original) + "\ntool \"oops\" {\n  descripton = \"a typo\"\n}\n"
	badLine := strings.Count(string(original), "\n") + 3
	if err := os.WriteFile(config, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "the diagnostic", `document.querySelector("#diagnostics .diag")`)
	diag := eval[string](t, b, `document.querySelector("#diagnostics .diag").innerText`)
	if !strings.Contains(diag, fmt.Sprintf("tools.hcl:%d:", badLine)) || !strings.Contains(diag, "descripton") {
		t.Errorf("diagnostic shown, want tools.hcl:%d and the source line:\n%s", badLine, diag)
	}
	if line := eval[string](t, b, `document.querySelector("#diagnostics .diag").dataset.line`); line != fmt.Sprint(badLine) {
		t.Errorf("diagnostic's line = %s, want %d", line, badLine)
	}
	if pill := eval[string](t, b, `document.getElementById("config-pill").textContent`); !strings.Contains(pill, "reload failed") {
		t.Errorf("status pill = %q", pill)
	}
	screenshot(t, b, shots, "04-diagnostic")

	// 5. Fixing the file clears it, and the new generation is shown.
	fixed := string(original) + "\ntool \"oops\" {\n  description = \"fixed\"\n  result {\n    content \"text\" {\n      text = \"ok\"\n    }\n  }\n}\n"
	if err := os.WriteFile(config, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "the diagnostic to clear", `!document.querySelector("#diagnostics .diag") && document.getElementById("generation").textContent === "2"`)
	waitFor(t, b, "the new tool in the list", `document.querySelector('#tools-list button[data-id="oops"]')`)
	screenshot(t, b, shots, "05-fixed")

	// 6. A call from another client shows up among the recent calls, with
	// the console's own calls marked as such.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "word_count", Arguments: map[string]any{"text": "one two three"}})
	if err != nil || res.IsError {
		t.Fatalf("word_count: %v %v", err, res)
	}
	waitFor(t, b, "the other client's call", `document.querySelector('#calls tr[data-name="word_count"][data-client=""]')`)
	consoleRows := eval[int](t, b, `document.querySelectorAll('#calls tr[data-name="list_books"][data-client="console"]').length`)
	if consoleRows != 2 {
		t.Errorf("%d console calls of list_books listed, want 2", consoleRows)
	}
	if bad := eval[int](t, b, `document.querySelectorAll('#calls tr.bad[data-name="list_books"]').length`); bad != 1 {
		t.Errorf("%d failed list_books calls listed, want 1", bad)
	}
	screenshot(t, b, shots, "06-recent-calls")

	// 7. The view a config author keeps open (the README's picture): a
	// result, the recent calls, and a broken edit's diagnostic. The
	// reload before kept the open tool's form and result.
	if got := eval[string](t, b, `document.querySelector(".result .outcome")?.textContent`); got != "tool error (isError)" {
		t.Errorf("after a reload that left list_books as it was, its result shows %q, want the last one kept", got)
	}
	step(t, b, "calling list_books again",
		chromedp.SetValue(chromedp.CSS(`#call-form input[name="limit"]`), "5"),
		chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)),
	)
	waitFor(t, b, "the tool's result", `document.querySelector(".result.ok .outcome")`)
	if err := os.WriteFile(config, []byte(strings.Replace(fixed, `description = "fixed"`, `description = "fixed"`+"\n  timeout = 5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "the second diagnostic", `document.querySelector("#diagnostics .diag")`)
	screenshot(t, b, shots, "07-overview")

	// The labels in the log and the audit log.
	if !strings.Contains(logs.String(), `msg="call from the console" client=console kind=tool name=list_books`) {
		t.Errorf("no log line marks the console's calls:\n%s", logs.String())
	}
	clients := auditClients(t, auditPath, 4)
	if clients["list_books"] != "console" || clients["word_count"] != "" {
		t.Errorf("audit log clients = %v, want list_books by the console and word_count by no label", clients)
	}
}

// auditClients waits for n audit lines and returns each name's client.
func auditClients(t *testing.T, path string, n int) map[string]string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := map[string]string{}
		lines := 0
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				var e struct{ Name, Client string }
				if json.Unmarshal(sc.Bytes(), &e) == nil {
					out[e.Name] = e.Client
					lines++
				}
			}
			f.Close()
		}
		if lines >= n || time.Now().After(deadline) {
			if lines < n {
				t.Errorf("%d audit lines, want %d", lines, n)
			}
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Who may reach the console, on the real binary with an auth block: it is off
// without --ui; its page loads without a token (it holds no data, and asks
// for one) but the event stream needs the same token as /mcp; a foreign
// Origin or Host gets 403 for both; --ui with --stdio is refused.
func TestConsoleAccess(t *testing.T) {
	dir := writeConfig(t, cliConfig+authConfig)
	get := func(url, header, value string, origin string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if header != "" {
			req.Header.Set(header, value)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Content-Type")
	}

	off := mcpdCommand("serve", "--ui=false", "--http", "127.0.0.1:0", "-c", dir)
	off.Env = append(off.Env, "MCPD_TEST_KEY=key-1")
	endpoint := startHTTP(t, off)
	if code, _ := get(strings.TrimSuffix(endpoint, "mcp")+"ui/", "", "", ""); code != http.StatusNotFound {
		t.Errorf("with --ui=false, /ui/ answers %d, want 404", code)
	}

	on := mcpdCommand("serve", "--ui", "--http", "127.0.0.1:0", "-c", dir)
	on.Env = append(on.Env, "MCPD_TEST_KEY=key-1")
	ui := strings.TrimSuffix(startHTTP(t, on), "mcp") + "ui/"
	for _, tc := range []struct {
		name, path, header, value, origin string
		want                              int
		typ                               string
	}{
		{"page, no token", "", "", "", "", 200, "text/html; charset=utf-8"},
		{"script, no token", "console.js", "", "", "", 200, "text/javascript; charset=utf-8"},
		{"page, foreign origin", "", "", "", "http://evil.example", 403, ""},
		{"events, no token", "events", "", "", "", 401, ""},
		{"events, wrong token", "events", "Authorization", "Bearer nope", "", 401, ""},
		{"events, bearer", "events", "Authorization", "Bearer key-1", "", 200, "text/event-stream"},
		{"events, key header", "events", "X-Api-Key", "key-1", "", 200, "text/event-stream"},
		{"events, loopback origin", "events", "X-Api-Key", "key-1", "http://localhost:5173", 200, "text/event-stream"},
		{"events, foreign origin", "events", "X-Api-Key", "key-1", "http://evil.example", 403, ""},
	} {
		code, typ := get(ui+tc.path, tc.header, tc.value, tc.origin)
		if code != tc.want || (tc.typ != "" && typ != tc.typ) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, typ, tc.want, tc.typ)
		}
	}

	r := runCLI(t, "serve", "--ui", "--stdio", "-c", dir)
	if r.code == 0 || !strings.Contains(r.stderr, "--ui needs the HTTP listener") {
		t.Errorf("serve --ui --stdio: exit %d, stderr %q", r.code, r.stderr)
	}
}

// chartConfig adds a tool whose result is an image.
const chartConfig = `
tool "chart" {
  description = "Draws a chart."
  result {
    content "text" {
      text = "the chart:"
    }
    content "image" {
      data      = filebase64("chart.png")
      mime_type = "image/png"
    }
  }
}
`

// The console in a browser against a server with an auth block: the page
// asks for a token, typed and submitted with the keyboard; then it lists
// and calls the tools as that principal (form fields of every kind, an
// image rendered), and its calls show the principal.
func TestConsoleInBrowserWithAuth(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found (see TestConsoleInBrowser)")
	}
	shots := artifactsDir(t)
	dir := writeConfig(t, cliConfig+authConfig+chartConfig)
	img := image.NewRGBA(image.Rect(0, 0, 24, 16))
	for x := range 24 {
		for y := range 16 {
			img.Set(x, y, color.RGBA{R: uint8(x * 10), G: 90, B: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chart.png"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := mcpdCommand("serve", "--ui", "--http", "127.0.0.1:0", "-c", dir)
	cmd.Env = append(cmd.Env, "MCPD_TEST_KEY=key-1")
	ui := strings.TrimSuffix(startHTTP(t, cmd), "mcp") + "ui/"

	b := browser(t, bin)
	step(t, b, "loading the console", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS(`#token-form`)))
	if n := eval[int](t, b, `document.querySelectorAll("#tools-list button").length`); n != 0 {
		t.Errorf("%d tools listed without a token", n)
	}
	// A wrong token is said once, by the token form, not once per list.
	step(t, b, "entering a wrong token",
		chromedp.Focus(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), "nope"),
		chromedp.KeyEvent("\r"),
	)
	waitFor(t, b, "the refusal", `document.getElementById("config-pill").textContent.includes("token refused")`)
	time.Sleep(300 * time.Millisecond) // the lists' and the stream's 401s are in
	if n := eval[int](t, b, `document.body.innerText.split(/refused|needs a token|HTTP 401/).length - 1`); n != 1 {
		t.Errorf("a wrong token is said %d times, want once:\n%s", n, eval[string](t, b, `document.body.innerText`))
	}
	screenshot(t, b, shots, "09-wrong-token")
	step(t, b, "entering the token",
		chromedp.Focus(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), "key-1"),
		chromedp.KeyEvent("\r"),
	)
	waitFor(t, b, "the tools", `document.querySelector('#tools-list button[data-id="lookup"]')`)
	waitFor(t, b, "the config status", `document.getElementById("generation")?.textContent === "1"`)

	// Each kind of field, filled in and read back as typed arguments.
	step(t, b, "opening lookup",
		chromedp.Click(chromedp.CSS(`#tools-list button[data-id="lookup"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#call-form`)),
		chromedp.SetValue(chromedp.CSS(`#call-form [name="id"]`), "A-7"),
		chromedp.SetValue(chromedp.CSS(`#call-form [name="verbose"]`), "true"),
		chromedp.SetValue(chromedp.CSS(`#call-form [name="tags"]`), "red\nblue"),
		chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)),
	)
	waitFor(t, b, "lookup's result", `document.querySelector(".result.ok .structured")`)
	var structured map[string]any
	if err := json.Unmarshal([]byte(eval[string](t, b, `document.querySelector(".result.ok .structured").textContent`)), &structured); err != nil {
		t.Fatal(err)
	}
	if want := `map[id:A-7 limit:10 tags:[red blue] verbose:true]`; fmt.Sprint(structured) != want {
		t.Errorf("structuredContent = %v, want %s", structured, want)
	}
	if req := eval[string](t, b, `document.querySelector('#call-form [name="id"]').getAttribute("aria-required")`); req != "true" {
		t.Errorf("the required param is not marked: aria-required=%q", req)
	}

	step(t, b, "calling chart",
		chromedp.Click(chromedp.CSS(`#tools-list button[data-id="chart"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#call-form`)),
		chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)),
	)
	waitFor(t, b, "the image", `document.querySelector(".result.ok img")?.naturalWidth === 24`)
	waitFor(t, b, "the calls, by ci-bot from the console", `document.querySelectorAll('#calls tr[data-client="console"]').length === 2`)
	who := eval[string](t, b, `document.querySelector('#calls tr[data-name="chart"] .who').textContent`)
	if !strings.Contains(who, "ci-bot") || !strings.Contains(who, "console") {
		t.Errorf("the chart call's caller shows %q, want ci-bot and console", who)
	}
	screenshot(t, b, shots, "08-auth-image")

	// Resources are read, templates filled in, prompts rendered.
	step(t, b, "reading readme",
		chromedp.Click(chromedp.CSS(`#resources-list button[data-id="docs://readme"]`)),
		chromedp.Click(chromedp.CSS(`#detail form.call button`)),
	)
	waitFor(t, b, "the resource", `document.querySelector(".result.ok pre.text")?.textContent === "Read me."`)
	step(t, b, "reading a user",
		chromedp.Click(chromedp.CSS(`#templates-list button[data-id="users://{id}"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail [name="id"]`)),
		chromedp.SetValue(chromedp.CSS(`#detail [name="id"]`), "u 7"),
		chromedp.Click(chromedp.CSS(`#detail form.call button[type="submit"]`)),
	)
	waitFor(t, b, "the template's resource", `document.querySelector(".result.ok pre.text")`)
	var user map[string]any
	if err := json.Unmarshal([]byte(eval[string](t, b, `document.querySelector(".result.ok pre.text").textContent`)), &user); err != nil || user["id"] != "u 7" {
		t.Errorf("users://u%%207 read as %v (%v)", user, err)
	}
	step(t, b, "rendering trip",
		chromedp.Click(chromedp.CSS(`#prompts-list button[data-id="trip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#detail [name="city"]`)),
		chromedp.SetValue(chromedp.CSS(`#detail [name="city"]`), "Rome"),
		chromedp.Click(chromedp.CSS(`#detail form.call button[type="submit"]`)),
	)
	waitFor(t, b, "the prompt", `document.querySelector(".result.ok pre.text")?.textContent === "Plan Rome"`)
	waitFor(t, b, "the read and the prompt among the calls", `document.querySelectorAll('#calls tr[data-client="console"]').length === 5`)
}

// startDemo serves the repository's default config (tools.hcl and its
// SQLite bookshop) from a temporary directory with the console on, and
// returns the console's URL and the bookshop's database file.
func startDemo(t *testing.T) (ui, db string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"tools.hcl", filepath.Join("demo", "seed.sql")} {
		data, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := mcpdCommand("serve", "--ui", "--http", "127.0.0.1:0", "-c", "tools.hcl")
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "MCPD_DATA_DIR="+filepath.Join(dir, ".mcpd"))
	return strings.TrimSuffix(startHTTP(t, cmd), "mcp") + "ui/", filepath.Join(dir, ".mcpd", "demo.db")
}

// inStock reads a book's stock from the demo's database itself, not
// through mcpd: the side effect a confirmation lets happen or not.
func inStock(t *testing.T, db string, id int) int {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow("SELECT in_stock FROM books WHERE id = ?", id).Scan(&n); err != nil {
		t.Fatalf("reading book %d's stock: %v", id, err)
	}
	return n
}

// openTool opens a tool from the catalog and fills its form.
func openTool(t *testing.T, b context.Context, name string, fields map[string]string) {
	t.Helper()
	acts := []chromedp.Action[chromedp.Void]{
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#tools-list button[data-id=%q]`, name))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`article[data-tool=%q] #call-form`, name))),
	}
	for k, v := range fields {
		acts = append(acts, chromedp.SetValue(chromedp.CSS(fmt.Sprintf(`#call-form [name=%q]`, k)), v))
	}
	step(t, b, "opening "+name, acts...)
}

// The console answers the demo's restock, which asks for a confirmation
// (2026-07-28 input_required): declined, the stock in the database stays
// as it was; confirmed, it grows. The rounds are listed as input required,
// open to their request and response, and replay into the form.
func TestConsoleConfirmInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found (see TestConsoleInBrowser)")
	}
	shots := artifactsDir(t)
	ui, db := startDemo(t)
	b := browser(t, bin)
	step(t, b, "loading the console", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	if name := eval[string](t, b, `document.getElementById("server-name").textContent`); !strings.HasPrefix(name, "mcpd-demo") {
		t.Errorf("the header shows %q, want the server's name mcpd-demo first", name)
	}
	// The bookshop's database is created at its first use.
	openTool(t, b, "list_books", nil)
	step(t, b, "calling list_books", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "list_books' result", `document.querySelector(".result.ok .outcome")`)
	before := inStock(t, db, 1)

	// Declined: the tool does not run.
	openTool(t, b, "restock", map[string]string{"id": "1", "copies": "3"})
	step(t, b, "calling restock", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "the confirmation", `document.querySelector('.result.asked .ask-item[data-kind="confirm"]')`)
	if msg := eval[string](t, b, `document.querySelector(".ask-msg").textContent`); msg != "Restock 3 copies of book 1?" {
		t.Errorf("the confirmation asks %q", msg)
	}
	screenshot(t, b, shots, "10-confirm")
	step(t, b, "declining", chromedp.Click(chromedp.CSS(`form.ask button.decline`)))
	waitFor(t, b, "the declined result", `document.querySelector(".result.ok .outcome")`)
	if text := eval[string](t, b, `document.querySelector(".result").innerText`); !strings.Contains(text, "declined") {
		t.Errorf("after declining, the result shows:\n%s", text)
	}
	if n := inStock(t, db, 1); n != before {
		t.Errorf("declined, yet book 1's stock went from %d to %d", before, n)
	}

	// Confirmed: it runs once.
	step(t, b, "calling restock again", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "the confirmation", `document.querySelector('.result.asked form.ask button.accept')`)
	step(t, b, "confirming", chromedp.Click(chromedp.CSS(`form.ask button.accept`)))
	waitFor(t, b, "the restock's result", `document.querySelector(".result.ok .structured")`)
	var got struct {
		InStock int `json:"in_stock"`
	}
	if err := json.Unmarshal([]byte(eval[string](t, b, `document.querySelector(".result.ok .structured").textContent`)), &got); err != nil {
		t.Fatal(err)
	}
	if n := inStock(t, db, 1); n != before+3 || got.InStock != n {
		t.Errorf("confirmed: stock %d in the database and %d shown, want %d", n, got.InStock, before+3)
	}
	// The JSON text result is pretty-printed, its raw text kept.
	if pretty := eval[string](t, b, `document.querySelector(".result.ok pre.text.json")?.textContent || ""`); !strings.Contains(pretty, "\n  \"in_stock\"") {
		t.Errorf("the JSON text is not pretty-printed: %q", pretty)
	}
	if raw := eval[string](t, b, `document.querySelector(".result.ok .raw-text pre.raw")?.textContent || ""`); !strings.HasPrefix(raw, `{"id":1,`) {
		t.Errorf("the raw text is not kept: %q", raw)
	}

	// Four rounds, the asking ones as such; the tool now has its badge.
	waitFor(t, b, "the four rounds", `document.querySelectorAll('#calls tr[data-name="restock"][data-mine="true"]').length === 4`)
	outcomes := eval[[]string](t, b, `[...document.querySelectorAll('#calls tr[data-name="restock"]')].map(r => r.dataset.outcome)`)
	if want := []string{"ok", "input_required", "ok", "input_required"}; !slices.Equal(outcomes, want) {
		t.Errorf("restock's rounds are listed as %v, want %v (newest first)", outcomes, want)
	}
	if badge := eval[string](t, b, `document.querySelector('#tools-list button[data-id="restock"] .badge.asks')?.textContent || ""`); badge != "asks" {
		t.Errorf("restock has no asks badge after asking")
	}
	step(t, b, "opening the confirmed round", chromedp.Click(chromedp.CSS(`#calls tr[data-name="restock"] button.open`)))
	waitFor(t, b, "the round's detail", `document.querySelector("#calls tr.call-detail pre.resp")`)
	req := eval[string](t, b, `document.querySelector("#calls tr.call-detail pre.req").textContent`)
	resp := eval[string](t, b, `document.querySelector("#calls tr.call-detail pre.resp").textContent`)
	if !strings.Contains(req, `"inputResponses"`) || !strings.Contains(req, `"accept"`) || !strings.Contains(resp, fmt.Sprintf(`"in_stock": %d`, before+3)) {
		t.Errorf("the round opens to request\n%s\nand response\n%s", req, resp)
	}
	screenshot(t, b, shots, "11-confirmed-round")
	step(t, b, "opening list_books", chromedp.Click(chromedp.CSS(`#tools-list button[data-id="list_books"]`)), chromedp.WaitVisible(chromedp.CSS(`article[data-tool="list_books"]`)))
	step(t, b, "replaying the round", chromedp.Click(chromedp.CSS(`#calls tr.call-detail button.replay`)))
	waitFor(t, b, "restock's form again", `document.querySelector('article[data-tool="restock"] #call-form')`)
	if v := eval[[]string](t, b, `["id", "copies"].map(n => document.querySelector('#call-form [name="' + n + '"]').value)`); !slices.Equal(v, []string{"1", "3"}) {
		t.Errorf("replayed into the form: id, copies = %v, want 1, 3", v)
	}
}

// consoleAskConfig has a tool for each kind of question the console answers, and
// one that reports progress and logs.
const consoleAskConfig = `
server {
  name = "ask-e2e"
}

tool "signup" {
  description = "Asks for a form."
  ask "who" {
    elicit = "Who are you?"
    field "nick" {
      type       = "string"
      min_length = 2
    }
    field "age" {
      type    = "integer"
      minimum = 18
    }
    field "plan" {
      type = "string"
      enum = ["free", "pro"]
    }
  }
  result {
    content "text" {
      text = "signed up ${inputs.who.nick}, ${inputs.who.age}, ${inputs.who.plan}"
    }
  }
}

tool "summarize" {
  description = "Asks for a completion."
  ask "llm" {
    sample        = "Summarize: the quick brown fox."
    system_prompt = "Be brief."
    max_tokens    = 40
  }
  result {
    content "text" {
      text = "the model said: ${inputs.llm}"
    }
  }
}

tool "where" {
  description = "Asks for the roots."
  ask "roots" { roots = true }
  result {
    content "text" {
      text = "roots: ${join(", ", [for r in inputs.roots : r.uri])}"
    }
  }
}

prompt "intro" {
  description = "Asks before it renders."
  ask "who" {
    elicit = "Your name?"
    field "name" { type = "string" }
  }
  message {
    role = "user"
    text = "Hi ${inputs.who.name}"
  }
}

tool "slow" {
  description = "Reports progress and logs."
  log {
    when    = "before"
    message = "'starting the slow work'"
  }
  progress {
    steps    = [0, 50, 100]
    total    = 100
    interval = "300ms"
    message  = "Working"
  }
  result {
    content "text" {
      text = "done"
    }
  }
}
`

// The console answers a form (a wrong answer is said at its field and
// not sent, then the right one is), a sampling request by hand and a
// roots request from a list the user edits; a call's progress and log
// records show live; and at 700 px wide nothing overflows the window and
// the form keeps its width.
func TestConsoleAsksInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found (see TestConsoleInBrowser)")
	}
	shots := artifactsDir(t)
	dir := writeConfig(t, consoleAskConfig)
	cmd := mcpdCommand("serve", "--ui", "--http", "127.0.0.1:0", "-c", dir)
	ui := strings.TrimSuffix(startHTTP(t, cmd), "mcp") + "ui/"
	b := browser(t, bin)
	step(t, b, "loading the console", chromedp.Navigate(ui), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)))
	rounds := func(name string) int {
		return eval[int](t, b, fmt.Sprintf(`document.querySelectorAll('#calls tr[data-name=%q]').length`, name))
	}

	// A form: a wrong answer is marked and not sent.
	openTool(t, b, "signup", nil)
	step(t, b, "calling signup", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "the form", `document.querySelector('.ask-item[data-kind="form"] [name="age"]')`)
	waitFor(t, b, "the first round listed", `document.querySelectorAll('#calls tr[data-name="signup"]').length === 1`)
	step(t, b, "answering wrong",
		chromedp.SetValue(chromedp.CSS(`form.ask [name="nick"]`), "ann"),
		chromedp.SetValue(chromedp.CSS(`form.ask [name="age"]`), "12"),
		chromedp.SetValue(chromedp.CSS(`form.ask [name="plan"]`), `"pro"`),
		chromedp.Click(chromedp.CSS(`form.ask button.accept`)),
	)
	waitFor(t, b, "the field's error", `document.querySelector('form.ask .field.invalid[data-field="age"] .field-error:not([hidden])')`)
	if msg := eval[string](t, b, `document.querySelector('form.ask .field.invalid .field-error').textContent`); !strings.Contains(msg, "≥ 18") {
		t.Errorf("the age's error says %q", msg)
	}
	if n := eval[int](t, b, `document.querySelectorAll("form.ask .field.invalid").length`); n != 1 {
		t.Errorf("%d fields marked invalid, want 1 (age)", n)
	}
	screenshot(t, b, shots, "12-form-invalid")
	time.Sleep(300 * time.Millisecond) // a round sent by mistake would be listed by now
	if n := rounds("signup"); n != 1 {
		t.Errorf("%d signup rounds after a wrong answer, want 1: it was sent", n)
	}
	step(t, b, "answering right",
		chromedp.SetValue(chromedp.CSS(`form.ask [name="age"]`), "30"),
		chromedp.Click(chromedp.CSS(`form.ask button.accept`)),
	)
	waitFor(t, b, "signup's result", `document.querySelector(".result.ok pre.text")`)
	if text := eval[string](t, b, `document.querySelector(".result.ok pre.text").textContent`); text != "signed up ann, 30, pro" {
		t.Errorf("signup answers %q", text)
	}

	// Sampling, answered by hand.
	openTool(t, b, "summarize", nil)
	step(t, b, "calling summarize", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "the sampling request", `document.querySelector('.ask-item[data-kind="sampling"] [name="sampling-answer"]')`)
	shown := eval[string](t, b, `document.querySelector('.ask-item[data-kind="sampling"]').innerText`)
	if !strings.Contains(shown, "Summarize: the quick brown fox.") || !strings.Contains(shown, "Be brief.") || !strings.Contains(shown, "40 tokens") {
		t.Errorf("the sampling request shows:\n%s", shown)
	}
	step(t, b, "answering as the model",
		chromedp.SetValue(chromedp.CSS(`form.ask [name="sampling-answer"]`), "A fox."),
		chromedp.Click(chromedp.CSS(`form.ask button.accept`)),
	)
	waitFor(t, b, "summarize's result", `document.querySelector(".result.ok pre.text")?.textContent === "the model said: A fox."`)

	// Roots, from a list the user edits (and the page remembers).
	openTool(t, b, "where", nil)
	step(t, b, "calling where", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "the roots request", `document.querySelector('.ask-item[data-kind="roots"] [name="roots"]')`)
	step(t, b, "listing the roots",
		chromedp.SetValue(chromedp.CSS(`form.ask [name="roots"]`), "file:///srv/a\nfile:///srv/b"),
		chromedp.Click(chromedp.CSS(`form.ask button.accept`)),
	)
	waitFor(t, b, "where's result", `document.querySelector(".result.ok pre.text")?.textContent === "roots: file:///srv/a, file:///srv/b"`)
	step(t, b, "calling where again", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "the roots request", `document.querySelector('form.ask [name="roots"]')`)
	if v := eval[string](t, b, `document.querySelector('form.ask [name="roots"]').value`); v != "file:///srv/a\nfile:///srv/b" {
		t.Errorf("the roots list is not remembered: %q", v)
	}
	step(t, b, "cancelling", chromedp.Click(chromedp.CSS(`form.ask button.cancel`)))
	waitFor(t, b, "the cancelled call", `!!(document.querySelector(".result.cancelled") && document.querySelector('#calls tr[data-name="where"][data-outcome="cancelled"]'))`)

	// A prompt asks as a tool does.
	step(t, b, "rendering intro",
		chromedp.Click(chromedp.CSS(`#prompts-list button[data-id="intro"]`)),
		chromedp.WaitVisible(chromedp.CSS(`article[data-prompt="intro"] #call-form`)),
		chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)),
	)
	waitFor(t, b, "the prompt's question", `!!document.querySelector('form.ask [name="name"]')`)
	step(t, b, "answering", chromedp.SetValue(chromedp.CSS(`form.ask [name="name"]`), "Bo"), chromedp.Click(chromedp.CSS(`form.ask button.accept`)))
	waitFor(t, b, "the prompt", `document.querySelector(".result.ok pre.text")?.textContent === "Hi Bo"`)

	// Progress and log records, live.
	openTool(t, b, "slow", nil)
	step(t, b, "calling slow", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "progress while it runs", `document.querySelector('.live progress:not([hidden])') && !document.querySelector(".result.ok")`)
	waitFor(t, b, "slow's result", `document.querySelector(".result.ok pre.text")?.textContent === "done"`)
	live := eval[string](t, b, `document.querySelector(".live-log").innerText`)
	if !strings.Contains(live, "starting the slow work") || !strings.Contains(live, "progress 100 / 100") {
		t.Errorf("the live pane shows:\n%s", live)
	}
	screenshot(t, b, shots, "13-live")

	// Stopped while it runs: cancelled, here and among the recent calls.
	step(t, b, "calling slow again", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "progress while it runs", `!!document.querySelector('.live progress:not([hidden])') && !document.querySelector(".result.ok")`)
	step(t, b, "stopping it", chromedp.Click(chromedp.CSS(`.live button.stop`)))
	waitFor(t, b, "the stopped call", `!!(document.querySelector(".result.cancelled") && document.querySelector('#calls tr.cancelled[data-name="slow"][data-outcome="cancelled"]'))`)

	// 700 px wide: nothing sticks out of the window, the form keeps its
	// width, the recent calls go under the detail.
	step(t, b, "narrowing the window", chromedp.EmulateViewport(700, 800))
	openTool(t, b, "signup", nil)
	step(t, b, "calling signup", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "the form", `document.querySelector('form.ask [name="age"]')`)
	over := eval[[]string](t, b, `[...document.querySelectorAll("body *")].filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > innerWidth + 0.5 || r.left < -0.5) }).map(e => e.tagName + "." + e.className)`)
	if len(over) > 0 {
		t.Errorf("at 700 px, elements overflow the window: %v", over)
	}
	if w := eval[float64](t, b, `document.getElementById("detail").getBoundingClientRect().width`); w < 450 {
		t.Errorf("at 700 px the detail column is %.0f px wide, want ≥ 450", w)
	}
	if w := eval[float64](t, b, `document.querySelector('form.ask [name="nick"]').getBoundingClientRect().width`); w < 200 {
		t.Errorf("at 700 px the form's input is %.0f px wide", w)
	}
	if sw := eval[float64](t, b, `document.documentElement.scrollWidth`); sw > 700 {
		t.Errorf("at 700 px the page scrolls sideways: %.0f px wide", sw)
	}
	screenshot(t, b, shots, "14-narrow")
}
