package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/internal/wait"
)

// auditToken is the env() secret of auditConfig; auditPassword the value of
// a sensitive param.
const (
	auditToken    = "tok-AuditE2E-9f8e7d"
	auditPassword = "Hunter2-secret"
)

const auditConfig = `
server {
  name    = "audit-e2e"
  version = "1"
}

tool "login" {
  description = "Logs in; the backend echoes the password and its token in its error."
  param "user" {
    type = "string"
  }
  param "password" {
    type      = "string"
    sensitive = true
    pattern   = "^[A-Za-z0-9-]{8,}$"
  }
  shell {
    command = ["/bin/sh", "-c", "echo \"login failed for $1 with password $2 (token $TOKEN)\" >&2; exit 1", "sh", args.user, args.password]
    env     = { TOKEN = env("AUDIT_E2E_TOKEN") }
  }
}

tool "hello" {
  description = "Greets."
  param "name" {
    type = "string"
  }
  result {
    content "text" {
      text = "Hello ${args.name}"
    }
  }
}

resource "motd" {
  uri  = "text://motd"
  text = "Welcome."
}

prompt "greet" {
  argument "who" {
    required = true
  }
  message {
    text = "Greet ${args.who}."
  }
}
`

// auditFields are the keys of every audit line.
var auditFields = []string{"time", "duration_ms", "principal", "auth_method", "identity", "identity_subject", "actor", "session_id", "request_id", "transport",
	"protocol_version", "client", "kind", "name", "arguments", "outcome", "bytes_out", "error", "config_generation"}

var auditTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line is not JSON: %v\n%s", err, line)
		}
		for _, k := range auditFields {
			if _, ok := m[k]; !ok {
				t.Errorf("audit line without %s: %s", k, line)
			}
		}
		if ts, _ := m["time"].(string); !auditTimeRE.MatchString(ts) {
			t.Errorf("time %q is not RFC 3339 UTC with milliseconds", ts)
		}
		out = append(out, m)
	}
	return out
}

// One complete line per tool call, resource read and prompt get, over a
// real stdio session: sensitive params and env() secrets redacted in the
// line, in what the client gets and in mcpd's log.
func TestAuditLog(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": auditConfig})
	logPath := filepath.Join(t.TempDir(), "audit.log")
	cmd := mcpdCommand("serve", "--stdio", "-c", dir, "--audit-log", logPath, "--log-level", "debug")
	cmd.Env = append(cmd.Env, "AUDIT_E2E_TOKEN="+auditToken)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}

	calls := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    string // in the text the client gets
	}{
		{"hello", map[string]any{"name": "Ann"}, false, "Hello Ann"},
		// The backend echoes the password and the token: both redacted.
		{"login", map[string]any{"user": "bob", "password": auditPassword}, true, "login failed for bob with password [redacted] (token [redacted])"},
		// The validator does not echo a sensitive value.
		{"login", map[string]any{"user": "bob", "password": "bad pw!x"}, true, `argument "password" must match the pattern ^[A-Za-z0-9-]{8,}$, got a value not shown`},
		// A secret a client sends in a plain argument is redacted in the
		// audit line.
		{"hello", map[string]any{"name": auditToken}, false, "Hello [redacted]"},
	}
	for _, c := range calls {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError != c.isError || !strings.Contains(textOf(res), c.want) {
			t.Errorf("%s: isError=%v %q, want %v and %q", c.tool, res.IsError, textOf(res), c.isError, c.want)
		}
	}
	if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
	if _, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "text://motd"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Zed"}}); err != nil {
		t.Fatal(err)
	}
	cs.Close() // stdin closes: mcpd drains, writes the audit log and exits
	if err := cmd.Wait(); err != nil && cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("mcpd: %v\n%s", err, stderr.String())
	}

	raw, _ := os.ReadFile(logPath)
	for _, secret := range []string{auditToken, auditPassword, "bad pw!x"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("%q is in the audit log:\n%s", secret, raw)
		}
		if strings.Contains(stderr.String(), secret) {
			t.Errorf("%q is in mcpd's log:\n%s", secret, stderr.String())
		}
	}
	lines := readAudit(t, logPath)
	want := []struct{ kind, name, outcome, args, errText string }{
		{"tool", "hello", "ok", `{"name":"Ann"}`, ""},
		{"tool", "login", "tool_error", `{"password":"[redacted]","user":"bob"}`, "with password [redacted] (token [redacted])"},
		{"tool", "login", "tool_error", `{"password":"[redacted]","user":"bob"}`, "got a value not shown"},
		{"tool", "hello", "ok", `{"name":"[redacted]"}`, ""},
		{"tool", "nope", "protocol_error", `{}`, `unknown tool "nope"`},
		{"resource", "text://motd", "ok", `null`, ""},
		{"prompt", "greet", "ok", `{"who":"Zed"}`, ""},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d audit lines, want %d:\n%s", len(lines), len(want), raw)
	}
	ids := map[string]bool{}
	for i, w := range want {
		l := lines[i]
		args, _ := json.Marshal(l["arguments"])
		errText, _ := l["error"].(string)
		if l["kind"] != w.kind || l["name"] != w.name || l["outcome"] != w.outcome || string(args) != w.args ||
			(w.errText == "") != (errText == "") || !strings.Contains(errText, w.errText) {
			t.Errorf("line %d: kind=%v name=%v outcome=%v arguments=%s error=%q\nwant %+v", i, l["kind"], l["name"], l["outcome"], args, errText, w)
		}
		if l["principal"] != "local" || l["auth_method"] != "none" || l["transport"] != "stdio" || l["config_generation"] != 1.0 {
			t.Errorf("line %d: principal=%v auth_method=%v transport=%v generation=%v", i, l["principal"], l["auth_method"], l["transport"], l["config_generation"])
		}
		if d, _ := l["duration_ms"].(float64); d <= 0 {
			t.Errorf("line %d: duration_ms %v", i, l["duration_ms"])
		}
		if b, _ := l["bytes_out"].(float64); (w.outcome == "protocol_error") != (b == 0) {
			t.Errorf("line %d: bytes_out %v for outcome %s", i, l["bytes_out"], w.outcome)
		}
		id, _ := l["request_id"].(string)
		if id == "" || ids[id] {
			t.Errorf("line %d: request_id %q empty or repeated", i, id)
		}
		ids[id] = true
	}
}

// MCPD_AUDIT_LOG sets the file; after logrotate renames it, SIGHUP makes
// mcpd write new lines to a new file at the path. Over HTTP a 2025 session's
// lines carry its session id.
func TestAuditLogReopenOnSIGHUP(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": auditConfig})
	logPath := filepath.Join(t.TempDir(), "audit.log")
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir)
	cmd.Env = append(cmd.Env, "MCPD_AUDIT_LOG="+logPath, "AUDIT_E2E_TOKEN="+auditToken)
	endpoint, logs := startHTTPLogs(t, cmd)
	cs := connectHTTP(t, endpoint, "2025-11-25", nil)
	call := func(name string) {
		t.Helper()
		if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"name": name}}); err != nil {
			t.Fatal(err)
		}
	}
	waitFile := func(path, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, _ := os.ReadFile(path)
			if strings.Contains(string(b), want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never got %q; it has:\n%s\nmcpd log:\n%s", path, want, b, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	call("before")
	waitFile(logPath, `"name":"before"`)
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "audit log reopened") {
		if time.Now().After(deadline) {
			t.Fatalf("no reopen after SIGHUP:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	call("after")
	waitFile(logPath, `"name":"after"`)

	old := readAudit(t, logPath+".1")
	cur := readAudit(t, logPath)
	if len(old) != 1 || len(cur) != 1 {
		t.Fatalf("%d lines in the rotated file, %d in the new one; want 1 and 1", len(old), len(cur))
	}
	if cur[0]["transport"] != "http" || cur[0]["protocol_version"] != "2025-11-25" || cur[0]["session_id"] == "" || cur[0]["session_id"] != old[0]["session_id"] {
		t.Errorf("line after the reopen: %v", cur[0])
	}
	if st, err := os.Stat(logPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("new file: %v %v", st.Mode(), err)
	}
}

// An audit log nobody reads (a FIFO whose reader never reads) slows no call:
// lines beyond the queue are dropped and counted in
// mcpd_audit_dropped_total, a warning is logged, and a shutdown does not
// wait for the writer longer than its bound.
func TestAuditLogBlockedWriter(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": auditConfig})
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Open the read end without ever reading: mcpd's open succeeds and its
	// writes block once the pipe's buffer (64 KiB) is full.
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir, "--audit-log", fifo, "--audit-log-queue", "4")
	cmd.Env = append(cmd.Env, "AUDIT_E2E_TOKEN="+auditToken)
	endpoint, logs := startHTTPLogs(t, cmd)
	cs := connectHTTP(t, endpoint, "2026-07-28", nil)

	big := strings.Repeat("x", 16<<10) // four lines fill the pipe
	var slowest time.Duration
	const calls = 40
	for i := 0; i < calls; i++ {
		start := time.Now()
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{"name": big}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %v", i, err, res)
		}
		slowest = max(slowest, time.Since(start))
	}
	// A call that waited for the writer would wait forever; the bound is
	// generous for a loaded machine.
	if slowest > 5*time.Second {
		t.Errorf("slowest call took %v with the audit log blocked", slowest)
	}
	_, scrape := httpGet(t, strings.TrimSuffix(endpoint, "/mcp")+"/metrics")
	v, ok := metricValue(scrape, "mcpd_audit_dropped_total")
	dropped, _ := strconv.ParseFloat(v, 64)
	// Four lines in the pipe, four queued, a few in the writer's buffer.
	if !ok || dropped < calls-20 {
		t.Errorf("mcpd_audit_dropped_total = %q (found %v), want at least %d", v, ok, calls-20)
	}
	if !strings.Contains(logs.String(), "audit log is not keeping up") {
		t.Errorf("no warning about dropped lines:\n%s", logs.String())
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, cmd, 30*time.Second)
	if code != 0 || took > auditCloseWait+5*time.Second {
		t.Errorf("exit %d after %v (since SIGTERM %v)", code, took, time.Since(start))
	}
	if !strings.Contains(logs.String(), "closing the audit log") {
		t.Errorf("no warning about the lines not written:\n%s", logs.String())
	}
}

// On SIGTERM, the calls answered during the drain are in the audit log
// when mcpd has exited: one that finished within the grace period (ok) and
// one cancelled when it ended (cancelled).
func TestAuditLogDrain(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	logPath := filepath.Join(t.TempDir(), "audit.log")
	s := startOps(t, dir, "--shutdown-grace", "1500ms", "--audit-log", logPath)
	cs := connectHTTP(t, s.endpoint, "2026-07-28", nil)
	var wg sync.WaitGroup
	for _, secs := range []string{"1", "30"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": secs}}); err != nil {
				t.Errorf("sleep %s: %v", secs, err)
			}
		}()
	}
	wait.Until(t, "both calls running", func() bool {
		_, scrape := httpGet(t, s.base+"/metrics")
		v, _ := metricValue(scrape, "mcpd_tool_calls_in_flight")
		return v == "2"
	})
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if code, _ := waitExit(t, s.cmd, 15*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, s.logs.String())
	}
	outcomes := map[string]string{}
	for _, l := range readAudit(t, logPath) {
		args, _ := l["arguments"].(map[string]any)
		outcomes[fmt.Sprint(args["seconds"])], _ = l["outcome"].(string)
	}
	if outcomes["1"] != "ok" || outcomes["30"] != "cancelled" || len(outcomes) != 2 {
		t.Errorf("audited outcomes by seconds: %v; want 1: ok, 30: cancelled", outcomes)
	}
}
