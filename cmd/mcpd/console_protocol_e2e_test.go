package main

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The console at 800 px wide, as on a small laptop or beside an editor:
// a tool's result is on screen after a call and nothing scrolls sideways;
// the protocol log shows the page's JSON-RPC messages both ways and
// filters them; "Copy as curl" and "Copy as mcpd call" give commands that,
// run for real, make the same call.
func TestConsoleProtocolLogInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" && os.Getenv("MCPD_TEST_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no Chromium found, and MCPD_TEST_REQUIRE_CHROMIUM=1: the console's browser test must run")
	}
	if bin == "" {
		t.Skip("no Chromium found: apt-get install chromium, or MCPD_TEST_CHROMIUM=/path/to/chrome")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the copied curl command cannot be run")
	}
	shots := artifactsDir(t)
	ui, db := startDemo(t)
	configDir := filepath.Dir(filepath.Dir(db))
	b := browser(t, bin)

	step(t, b, "loading the console at 800x600",
		chromedp.EmulateViewport(800, 600),
		chromedp.Navigate(ui),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
	)
	// The catalog's own calls are in the log, both ways.
	waitFor(t, b, "tools/list in the protocol log", `document.querySelector('#proto-list li.out[data-method="tools/list"]') && [...document.querySelectorAll('#proto-list li.in .m')].some(m => m.textContent === "tools/list result")`)

	openTool(t, b, "get_book", map[string]string{"id": "2"})
	step(t, b, "calling get_book", chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)))
	waitFor(t, b, "get_book's result", `document.querySelector(".result.ok .outcome")`)
	title := bookTitle(t, db, 2)
	if text := eval[string](t, b, `document.querySelector(".result").innerText`); !strings.Contains(text, title) {
		t.Fatalf("get_book(2) shows %q, want %q in it", text, title)
	}

	// 800 px: the result is in the viewport, and the page is no wider.
	inView := eval[bool](t, b, `(() => { const r = document.querySelector(".result").getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight - 40 && r.left >= 0 && r.right <= innerWidth && r.width >= 300 })()`)
	if !inView {
		t.Errorf("at 800x600 the result is not on screen: %s", eval[string](t, b, `JSON.stringify(document.querySelector(".result").getBoundingClientRect())`))
	}
	if w := eval[int](t, b, `document.documentElement.scrollWidth`); w > 800 {
		t.Errorf("the page is %d px wide at an 800 px viewport", w)
	}
	screenshot(t, b, shots, "08-800px-result")

	// The filter keeps the call's request and its result.
	step(t, b, "filtering the protocol log", chromedp.SendKeys(chromedp.CSS(`#proto-filter`), "tools/call"))
	shown := eval[[]string](t, b, `[...document.querySelectorAll('#proto-list li')].filter(li => !li.hidden).map(li => li.dataset.dir + " " + li.querySelector(".m").textContent)`)
	if len(shown) != 2 || shown[0] != "in tools/call result" || shown[1] != "out tools/call" {
		t.Errorf("the log filtered by tools/call shows %q, want the result and the request, newest first", shown)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#proto-list li').length`); n <= 2 {
		t.Errorf("the log holds %d messages, want the catalog's too", n)
	}
	sent := eval[string](t, b, `document.querySelector('#proto-list li.out[data-method="tools/call"] pre').textContent`)
	if !strings.Contains(sent, `"name": "get_book"`) || !strings.Contains(sent, `"id": 2`) {
		t.Errorf("the logged request is\n%s", sent)
	}
	got := eval[string](t, b, `[...document.querySelectorAll('#proto-list li.in')].find(li => !li.hidden).querySelector("pre").textContent`)
	if !strings.Contains(got, title) {
		t.Errorf("the logged result lacks %q:\n%s", title, got)
	}
	step(t, b, "opening the request in the log", chromedp.Click(chromedp.CSS(`#proto-list li.out[data-method="tools/call"] summary`)))
	screenshot(t, b, shots, "09-protocol-log")

	// Copy as curl: the command, run by a shell, makes the call.
	step(t, b, "copy as curl", chromedp.Click(chromedp.CSS(`.copy button.copy-curl`)))
	curl := eval[string](t, b, `document.querySelector('pre.copied[data-kind="curl"]').textContent`)
	out, err := exec.Command("sh", "-c", curl).CombinedOutput()
	if err != nil || !strings.Contains(string(out), title) || strings.Contains(string(out), `"isError":true`) {
		t.Errorf("the copied curl command\n%s\ngave %v:\n%s", curl, err, out)
	}
	// Copy as mcpd call: the same call without a server, in the config's
	// directory (the mcpd of this test in place of the one on the PATH).
	step(t, b, "copy as mcpd call", chromedp.Click(chromedp.CSS(`.copy button.copy-mcpd`)))
	line := eval[string](t, b, `document.querySelector('pre.copied[data-kind="mcpd"]').textContent`)
	if line != `mcpd call get_book --args '{"id":2}'` {
		t.Errorf("copy as mcpd call = %q", line)
	}
	cmd := exec.Command("sh", "-c", `"$MCPD_BIN"`+strings.TrimPrefix(line, "mcpd"))
	cmd.Dir = configDir
	cmd.Env = append(mcpdCommand().Env, "MCPD_BIN="+mcpdBin, "MCPD_DATA_DIR="+filepath.Dir(db))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), title) {
		t.Errorf("the copied mcpd call line gave %v:\n%s", err, out)
	}
	screenshot(t, b, shots, "10-copy-as")
}

// bookTitle reads a book's title from the demo's database itself.
func bookTitle(t *testing.T, db string, id int) string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var title string
	if err := conn.QueryRow("SELECT title FROM books WHERE id = ?", id).Scan(&title); err != nil {
		t.Fatalf("reading book %d: %v", id, err)
	}
	return title
}
