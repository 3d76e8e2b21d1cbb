package shell_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Under adapter.WithDryRun the process is described, not started: a
// command that would fail, and write a file first, reports success with no
// output, and the record holds its argv, stdin and directory.
func TestDryRunStartsNothing(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	params := map[string]string{"x": "string"}
	h := compile(t, dir, `shell {
  command = ["sh", "-c", "touch ran; exit 3", args.x]
  stdin   = args.x
  dir     = "."
}`, params)
	var got []adapter.Invocation
	ctx := adapter.WithDryRun(context.Background(), func(inv adapter.Invocation) { got = append(got, inv) })
	out, err := call(ctx, h, params, map[string]any{"x": "hi"}, nil)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if len(got) != 1 || len(got[0].Argv) != 4 || got[0].Argv[3] != "hi" || got[0].Stdin == nil || *got[0].Stdin != "hi" || got[0].Dir != dir {
		t.Fatalf("recorded %+v", got)
	}
	if out.Vars["stdout"] != "" || out.Vars["exit_code"] != 0 {
		t.Fatalf("output %+v", out.Vars)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the dry run started the process")
	}
	// Without it, the same call runs.
	if _, err := call(context.Background(), h, params, map[string]any{"x": "hi"}, nil); err == nil {
		t.Fatal("the real run should fail with exit 3")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the real run did not start the process: %v", err)
	}
}
