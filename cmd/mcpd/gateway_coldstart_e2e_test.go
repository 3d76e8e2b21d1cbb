package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/adapters/mcpadapter/mcptest"
)

// A gateway whose upstream starts through npx, on the npx's first start
// (here an npx that takes 11 s before it runs the server, as a download
// does): mcpd says it is starting, then that it is still starting and why,
// and waits for it past the 10 s connect_timeout other commands get. When
// the call is done and mcpd stops it, what Node writes (a stack trace for
// its write to the closed stdout) is not a warning.
func TestGatewayColdStartSays(t *testing.T) {
	node, script := mcptest.Everything(t)
	bin := t.TempDir()
	npx := filepath.Join(bin, "npx")
	if err := os.WriteFile(npx, []byte(fmt.Sprintf("#!/bin/sh\nsleep 11\nexec %q %q stdio\n", node, script)), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
mcp_server "up" {
  command = [%q, "-y", "@modelcontextprotocol/server-everything", "stdio"]
}

tool "echo" {
  description = "Repeat a message back."
  param "message" {
    type = "string"
  }
  mcp {
    server = "up"
    tool   = "echo"
  }
}
`, npx)})
	cmd := mcpdCommand("call", "-c", dir, "echo", "message=hi")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "Echo: hi") {
		t.Fatalf("mcpd call: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"starting upstream upstream=up command=npx",
		"upstream still starting upstream=up after=3s connect_timeout=2m0s",
		`why="npx downloads the server on its first start`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
		}
	}
	// Node's stack trace for a write to the stdout mcpd closed, when the
	// call is done, is shutdown noise: not a warning.
	if strings.Contains(stderr.String(), "EPIPE") {
		t.Errorf("the upstream's output while stopping was logged as a warning:\n%s", stderr.String())
	}
}
