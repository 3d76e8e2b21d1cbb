package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/mcpadapter/mcptest"
	"github.com/mcpd/mcpd/engine/lock"
	"github.com/mcpd/mcpd/internal/wait"
)

// `mcpd lock` against server-everything (npm, over stdio): the lock holds
// the config's own tool and everything the expose block lists (tools,
// resources, templates, prompts); --check passes until the upstream's
// definition differs from the lock (here: the lock holds an older
// description of its echo), then fails with a readable diff; a server
// started on that lock hides the tool as unknown in both eras and serves
// it again once `mcpd lock --approve echo` updated the lock, which the
// running server picks up from the file.
func TestLockEverything(t *testing.T) {
	clearEnv(t)
	node, script := mcptest.Everything(t)
	dir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
mcp_server "everything" {
  command = [%q, %q, "stdio"]
  expose {
    prefix    = "ev_"
    resources = true
    prompts   = true
  }
}

tool "local" {
  description = "A tool of the config's own."
  result {
    content "text" {
      text = "local"
    }
  }
}
`, node, script)})
	r := runCLI(t, "lock", "-c", dir, "--log-level", "error")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote ") {
		t.Fatalf("mcpd lock: %+v", r)
	}
	path := filepath.Join(dir, lock.FileName)
	f, err := lock.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, d := range f.Defs {
		kinds[d.Source+" "+d.Kind]++
	}
	for _, k := range []string{"config tool", "mcp_server.everything tool", "mcp_server.everything resource", "mcp_server.everything resource_template", "mcp_server.everything prompt"} {
		if kinds[k] == 0 {
			t.Errorf("the lock holds no %s: %v", k, kinds)
		}
	}
	if r := runCLI(t, "lock", "--check", "-c", dir, "--log-level", "error"); r.code != 0 || !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("mcpd lock --check right after mcpd lock: %+v", r)
	}

	// The lock as it was when echo's description was different.
	echo, ok := f.Get(lock.Key{Source: "mcp_server.everything", Kind: lock.KindTool, Name: "echo"})
	if !ok {
		t.Fatal("echo is not locked")
	}
	current := echo.Definition["description"].(string)
	old := map[string]any{}
	for k, v := range echo.Definition {
		old[k] = v
	}
	old["description"] = "Echoes back the input, as it did in the version reviewed."
	oldDef, err := lock.NewDef(echo.Source, echo.Kind, echo.Name, old, "name")
	if err != nil {
		t.Fatal(err)
	}
	*echo = oldDef
	if err := lock.Write(path, f); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "lock", "--check", "-c", dir, "--log-level", "error")
	want := "tool echo of mcp_server.everything: changed\n  description:\n    - Echoes back the input, as it did in the version reviewed.\n    + " + current + "\n"
	if r.code != 1 || r.stdout != want || !strings.Contains(r.stderr, "1 definitions") {
		t.Fatalf("mcpd lock --check after the change: code %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}

	// A server on that lock quarantines echo, and only echo.
	url := startHTTP(t, mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir))
	sessions := map[string]*mcp.ClientSession{}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "lock-e2e", Version: "1"}, nil)
		cs, err := c.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		sessions[version] = cs
		wait.Until(t, version+" sees ev_get-sum", func() bool { return toolNames(t, cs)["ev_get-sum"] })
		if names := toolNames(t, cs); names["ev_echo"] || !names["local"] {
			t.Fatalf("%s: tools %v", version, names)
		}
		_, errEcho := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ev_echo", Arguments: map[string]any{"message": "x"}})
		_, errUnknown := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ev_nope", Arguments: map[string]any{"message": "x"}})
		if errEcho == nil || errUnknown == nil || rpcCode(errEcho) != rpcCode(errUnknown) ||
			strings.ReplaceAll(errEcho.Error(), "ev_echo", "X") != strings.ReplaceAll(errUnknown.Error(), "ev_nope", "X") {
			t.Fatalf("%s: the quarantined tool answers %v; an unknown one %v", version, errEcho, errUnknown)
		}
	}

	// Approval from the command line; the server reloads the lock file.
	r = runCLI(t, "lock", "--approve", "echo", "-c", dir, "--log-level", "error")
	if r.code != 0 || !strings.Contains(r.stdout, "approved 1 definitions") {
		t.Fatalf("mcpd lock --approve echo: %+v", r)
	}
	for version, cs := range sessions {
		wait.Until(t, version+" sees ev_echo again", func() bool { return toolNames(t, cs)["ev_echo"] })
	}
	if r := runCLI(t, "lock", "--check", "-c", dir, "--log-level", "error"); r.code != 0 {
		t.Fatalf("mcpd lock --check after approval: %+v", r)
	}
}

// Without a lock file, --check passes for a config that serves no
// upstream's definitions, and fails for one that does; a broken lock file
// is a config error with its name.
func TestLockCheckWithoutLock(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": cliConfig})
	if r := runCLI(t, "lock", "--check", "-c", dir); r.code != 0 || !strings.Contains(r.stdout, "no lock file") {
		t.Fatalf("--check without upstreams or lock: %+v", r)
	}
	if err := os.WriteFile(filepath.Join(dir, lock.FileName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "validate", "-c", dir); r.code != 1 || !strings.Contains(r.stderr, "mcpd.lock: not a lock file") {
		t.Fatalf("validate with a broken lock: %+v", r)
	}
}
