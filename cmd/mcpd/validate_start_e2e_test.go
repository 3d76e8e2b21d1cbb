package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/internal/wait"
)

// `mcpd validate` and `mcpd list` start nothing: a stdio upstream with
// start = "load" (whose program here leaves a marker file when it runs)
// is checked, not started. Before, building the snapshot started it. The
// config errors of such a block are still reported, and served, the block
// still starts before any call. The real binary.
func TestValidateDoesNotStartUpstream(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	marker := filepath.Join(t.TempDir(), "started")
	config := func(start string) string {
		return fmt.Sprintf(`
mcp_server "up" {
  command = [%q, "-c", "echo started > \"$0\"; exec sleep 30", %q]
  start   = %q
}

tool "echo" {
  description = "Echo through the upstream."
  mcp {
    server = "up"
    tool   = "echo"
  }
}
`, sh, marker, start)
	}
	dir := configDir(t, map[string]string{"tools.hcl": config("load")})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "-c", dir}, "valid (1 tool"},
		{[]string{"list", "-c", dir}, "echo"},
	} {
		args := tc.args
		cmd := mcpdCommand(args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", args[0], err, stderr.String())
		}
		if !strings.Contains(stdout.String(), tc.want) {
			t.Errorf("%s: stdout %q, want %q", args[0], stdout.String(), tc.want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s started the upstream's program (its marker file exists); stderr:\n%s", args[0], stderr.String())
		}
	}

	// The block's own errors are still found.
	bad := configDir(t, map[string]string{"tools.hcl": config("soon")})
	cmd := mcpdCommand("validate", "-c", bad)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "Invalid start") {
		t.Errorf("validate of start = \"soon\": %v, stderr:\n%s\nwant exit 1 and Invalid start", err, stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("validate of an invalid config started the upstream's program")
	}

	// Served, the same block starts at once, before any call.
	cmd = mcpdCommand("serve", "--stdio", "-c", dir)
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	wait.Until(t, "the served upstream's program started (start = \"load\")", func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
}
