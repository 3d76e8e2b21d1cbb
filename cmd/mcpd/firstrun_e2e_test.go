package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd/mcpd/internal/wait"
)

var consoleLogRE = regexp.MustCompile(`msg="serving the console" url=(\S+)`)

// The README's run command, started as it is written (only the port moved
// to a free one, through MCPD_HTTP, as the flag's variable), reaches the
// console without a second step: the log names the console's URL, which
// answers with the page, and says how to point a host at the server; and
// the demo, one local process, logs no replica warning.
func TestReadmeServeReachesConsole(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("no sh block in the README")
	}
	m := regexp.MustCompile(`(?m)^go run \./cmd/mcpd (serve[^#\n]*)`).FindSubmatch(block[1])
	if m == nil {
		t.Fatalf("the README's first commands\n%s\nhave no go run ./cmd/mcpd serve", block[1])
	}
	args := strings.Fields(string(m[1]))

	// The demo's files in a directory of the test's own, so that its
	// database is not created in the checkout.
	dir := t.TempDir()
	for _, f := range []string{"tools.hcl", filepath.Join("demo", "seed.sql")} {
		data, err := os.ReadFile(filepath.Join(root, f))
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
	cmd := mcpdCommand(args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "MCPD_HTTP=127.0.0.1:0", "MCPD_DATA_DIR="+filepath.Join(dir, ".mcpd"))
	endpoint, logs := startHTTPLogs(t, cmd)
	wait.Until(t, "the next-steps line", func() bool { return strings.Contains(logs.String(), `msg="next: `) })

	c := consoleLogRE.FindStringSubmatch(logs.String())
	if c == nil {
		t.Fatalf("`mcpd %s` logs no console URL:\n%s", strings.Join(args, " "), logs.String())
	}
	if code, body := httpGet(t, c[1]); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("GET %s: %d %.200s", c[1], code, body)
	}
	next := regexp.MustCompile(`msg="next: [^\n]*`).FindString(logs.String())
	for _, want := range []string{"open " + c[1] + " in a browser", "mcpd client-config --host HOST --http " + endpoint} {
		if !strings.Contains(next, want) {
			t.Errorf("the next-steps line %s\ndoes not say %q", next, want)
		}
	}
	if strings.Contains(logs.String(), "request_state_key") || strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("the demo on loopback logs a warning:\n%s", logs.String())
	}
	// The command the log suggests works against the running server.
	out, err := mcpdCommand("client-config", "--host", "claude-code", "--http", endpoint).CombinedOutput()
	if err != nil || !strings.Contains(string(out), endpoint) {
		t.Errorf("client-config --http %s: %v\n%s", endpoint, err, out)
	}
}

// What `mcpd serve` says and serves at start depends on where it listens:
// the console is on by default on loopback only, the request_state_key
// warning is given only where replicas may serve the same clients (a
// non-loopback listener, or a state block), and the next steps only where
// the URLs are ones this machine can open.
func TestServeStartupByAddress(t *testing.T) {
	const asking = `tool "hello" {
  description = "Says hello after asking"
  confirm     = "Say hello?"
  result {
    text = "'hello'"
  }
}
`
	plain := writeConfig(t, asking)
	keyed := writeConfig(t, "server {\n  request_state_key = \"0123456789abcdef0123\"\n}\n"+asking)
	type tc struct {
		name          string
		dir           string
		args, env     []string
		console, warn bool
		next          bool
	}
	cases := []tc{
		{name: "loopback, no flag", dir: plain, args: []string{"--http", "127.0.0.1:0"}, console: true, next: true},
		{name: "localhost, no flag", dir: plain, args: []string{"--http", "localhost:0"}, console: true, next: true},
		{name: "loopback, --ui=false", dir: plain, args: []string{"--http", "127.0.0.1:0", "--ui=false"}, next: true},
		{name: "loopback, MCPD_UI=false", dir: plain, args: []string{"--http", "127.0.0.1:0"}, env: []string{"MCPD_UI=false"}, next: true},
		{name: "all interfaces", dir: plain, args: []string{"--http", "0.0.0.0:0", "--insecure-no-auth"}, warn: true},
		{name: "all interfaces, --ui", dir: plain, args: []string{"--http", "0.0.0.0:0", "--insecure-no-auth", "--ui"}, console: true, warn: true},
		{name: "all interfaces, key set", dir: keyed, args: []string{"--http", "0.0.0.0:0", "--insecure-no-auth"}},
	}
	if redis := os.Getenv("MCPD_TEST_REDIS_URL"); redis != "" {
		shared := writeConfig(t, fmt.Sprintf("server {\n  state {\n    redis = %q\n  }\n}\n", redis)+asking)
		cases = append(cases, tc{name: "loopback, state block", dir: shared, args: []string{"--http", "127.0.0.1:0"}, console: true, warn: true, next: true})
	} else {
		t.Log("MCPD_TEST_REDIS_URL not set: the state block case is skipped")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := mcpdCommand(append([]string{"serve", "-c", c.dir}, c.args...)...)
			cmd.Env = append(cmd.Env, c.env...)
			endpoint, logs := startHTTPLogs(t, cmd)
			base := strings.TrimSuffix(loopbackURL(t, endpoint), "/mcp")
			code, _ := httpGet(t, base+"/ui/")
			if want := map[bool]int{true: 200, false: 404}[c.console]; code != want {
				t.Errorf("GET /ui/: %d, want %d", code, want)
			}
			// Every start-up line is written before the first request is
			// answered; stop mcpd and read them all.
			cmd.Process.Signal(syscall.SIGTERM)
			if code, _ := waitExit(t, cmd, 30*time.Second); code != 0 {
				t.Errorf("exit %d", code)
			}
			wait.Until(t, "the last log line", func() bool { return strings.Contains(logs.String(), "msg=stopped") })
			text := logs.String()
			if got := strings.Contains(text, "request_state_key is not set"); got != c.warn {
				t.Errorf("request_state_key warning: %v, want %v\n%s", got, c.warn, text)
			}
			if got := consoleLogRE.MatchString(text); got != c.console {
				t.Errorf("console URL logged: %v, want %v\n%s", got, c.console, text)
			}
			if got := strings.Contains(text, `msg="next: `); got != c.next {
				t.Errorf("next steps logged: %v, want %v\n%s", got, c.next, text)
			}
			if c.next && strings.Contains(text, "/ui/ in a browser") != c.console {
				t.Errorf("the next steps name the console %v, want %v\n%s", !c.console, c.console, text)
			}
		})
	}
}

func TestConsoleOn(t *testing.T) {
	for _, c := range []struct {
		ui, set, stdio bool
		addr           string
		want           bool
	}{
		{false, false, false, "127.0.0.1:8080", true},
		{false, false, false, "localhost:8080", true},
		{false, false, false, "[::1]:8080", true},
		{false, false, false, "127.0.0.2:8080", true},
		{false, false, false, "0.0.0.0:8080", false},
		{false, false, false, ":8080", false},
		{false, false, false, "[::]:8080", false},
		{false, false, false, "192.0.2.1:8080", false},
		{false, false, false, "mcp.example.com:8080", false},
		{false, false, false, "nonsense", false},
		{false, false, true, "127.0.0.1:8080", false},
		{false, true, false, "127.0.0.1:8080", false},
		{true, true, false, "0.0.0.0:8080", true},
	} {
		if got := consoleOn(c.ui, c.set, c.stdio, c.addr); got != c.want {
			t.Errorf("consoleOn(ui=%v set=%v stdio=%v %q) = %v, want %v", c.ui, c.set, c.stdio, c.addr, got, c.want)
		}
	}
}
