package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// cacheE2EConfig is a read-only tool whose every run appends a line to
// $CACHE_E2E_COUNTER: the count of backend calls.
func cacheE2EConfig(version, extra string) string {
	return `
tool "forecast" {
  description = "The forecast for a city."
  annotations {
    read_only = true
  }
  param "city" {
    type = "string"
  }
  cache {
    ttl = "1h"
  }
  shell {
    command = ["/bin/sh", "-c", "echo run >> \"$CACHE_E2E_COUNTER\"; echo \"sunny in $1 (` + version + `)\"", "sh", args.city]
    env     = { CACHE_E2E_COUNTER = env("CACHE_E2E_COUNTER") }
  }
}
` + extra
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// The result cache in a real server: a second call is served without
// running the tool, marked in _meta, the audit line and /metrics; a hot
// reload that edits the tool drops its entries, one that edits another
// tool keeps them.
func TestCacheE2E(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.hcl")
	if err := os.WriteFile(path, []byte(cacheE2EConfig("v1", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(t.TempDir(), "runs")
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", path, "--audit-log", auditPath)
	cmd.Env = append(cmd.Env, "CACHE_E2E_COUNTER="+counter)
	endpoint, logs := startHTTPLogs(t, cmd)
	cs := connectHTTP(t, endpoint, "2025-11-25", nil)
	ctx := bounded(t)
	forecast := func() *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Oslo"}})
		if err != nil || res.IsError {
			t.Fatalf("forecast: %v %v\n%s", err, res, logs.String())
		}
		return res
	}
	hit := func(res *mcp.CallToolResult) bool {
		m, _ := res.Meta["mcpd/cache"].(map[string]any)
		return m["hit"] == true
	}

	if res := forecast(); hit(res) || textOf(res) != "sunny in Oslo (v1)\n" {
		t.Fatalf("first call: %q, meta %v", textOf(res), res.Meta)
	}
	res := forecast()
	if !hit(res) || textOf(res) != "sunny in Oslo (v1)\n" {
		t.Fatalf("second call: %q, meta %v; want a hit", textOf(res), res.Meta)
	}
	if m := res.Meta["mcpd/cache"].(map[string]any); m["ttlMs"] != float64(3600000) || m["cacheScope"] != "private" {
		t.Errorf("hit _meta %v", m)
	}
	if n := countLines(t, counter); n != 1 {
		t.Fatalf("the tool ran %d times for two calls, want 1", n)
	}

	// Editing the tool: the next call runs the new tool. With a TTL of an
	// hour, seeing v2 at all proves that the old entry was dropped.
	if err := os.WriteFile(path, []byte(cacheE2EConfig("v2", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	wait.Until(t, "the edited tool answers", func() bool { return textOf(forecast()) == "sunny in Oslo (v2)\n" })
	runs := countLines(t, counter)
	if !hit(forecast()) || countLines(t, counter) != runs {
		t.Errorf("the edited tool's result is not cached")
	}

	// Editing another tool leaves this one's entries.
	other := "tool \"other\" {\n  description = \"Another.\"\n  result {\n    content \"text\" {\n      text = \"x\"\n    }\n  }\n}\n"
	if err := os.WriteFile(path, []byte(cacheE2EConfig("v2", other)), 0o644); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the new tool appears", func() bool {
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Tools) == 2
	})
	if res := forecast(); !hit(res) || countLines(t, counter) != runs {
		t.Errorf("a reload that did not change the tool dropped its entry (hit %v, runs %d, want %d)", hit(res), countLines(t, counter), runs)
	}

	// /metrics counts the hits and misses; the audit lines flag them.
	_, metrics := httpGet(t, strings.TrimSuffix(endpoint, "/mcp")+"/metrics")
	for _, result := range []string{"hit", "miss"} {
		re := regexp.MustCompile(`mcpd_tool_cache_lookups_total\{gen_ai_tool_name="forecast",result="` + result + `"\} (\d+)`)
		m := re.FindStringSubmatch(metrics)
		if m == nil {
			t.Errorf("no %s count in /metrics:\n%s", result, grepLines(metrics, "cache"))
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n < 1 {
			t.Errorf("%s count %d", result, n)
		}
	}
	if !strings.Contains(metrics, "mcpd_tool_cache_bytes ") {
		t.Errorf("no mcpd_tool_cache_bytes in /metrics")
	}
	var hits, misses int
	for _, line := range readAudit(t, auditPath) {
		if line["name"] != "forecast" {
			continue
		}
		switch line["cache"] {
		case "hit":
			hits++
		case "miss":
			misses++
		default:
			t.Errorf("audit line of a cached tool without its cache flag: %v", line)
		}
	}
	if hits < 3 || misses < 2 {
		t.Errorf("audit: %d hits and %d misses, want at least 3 and 2", hits, misses)
	}
}

// Two real mcpd processes with one state block share their results
// through Redis: a call answered by one is a hit on the other, and the
// tool ran once.
func TestCacheRedisTwoProcesses(t *testing.T) {
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	state := fmt.Sprintf("server {\n  name = \"cache-e2e\"\n  state {\n    redis      = %q\n    key_prefix = %q\n  }\n}\n", url, prefix)
	dir := configDir(t, map[string]string{"tools.hcl": state + cacheE2EConfig("v1", "")})
	counter := filepath.Join(t.TempDir(), "runs")
	var sessions []*mcp.ClientSession
	for range 2 {
		cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir)
		cmd.Env = append(cmd.Env, "CACHE_E2E_COUNTER="+counter)
		endpoint, _ := startHTTPLogs(t, cmd)
		sessions = append(sessions, connectHTTP(t, endpoint, "2025-11-25", nil))
	}
	ctx := bounded(t)
	call := func(cs *mcp.ClientSession) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Bergen"}})
		if err != nil || res.IsError {
			t.Fatalf("forecast: %v %v", err, res)
		}
		return res
	}
	// The state is probed when a process starts: until Redis is seen up,
	// calls run uncached. Wait for the first process's result to be
	// stored, then ask the second.
	wait.Until(t, "the first process answers from the cache", func() bool {
		m, _ := call(sessions[0]).Meta["mcpd/cache"].(map[string]any)
		return m != nil && m["hit"] == true
	})
	runs := countLines(t, counter)
	res := call(sessions[1])
	if m, _ := res.Meta["mcpd/cache"].(map[string]any); m == nil || m["hit"] != true {
		t.Errorf("the second process: _meta %v, want a hit from the first's result", res.Meta)
	}
	if got := countLines(t, counter); got != runs {
		t.Errorf("the tool ran %d times, want %d: the second process ran it", got, runs)
	}
}
