// Package importtest runs converted configurations in the importers'
// tests: loaded with the real loader and the adapters the test registers
// (every shipped one: adapters/builtin), served by the real server to a
// go-sdk client over in-memory transports. It imports no adapter itself:
// the engine never does.
package importtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Load writes files (name → source) to a temporary directory and loads it
// with the adapters of reg as mcpd validate does (an unset environment
// variable is only a warning). Any error fails the test.
func Load(t *testing.T, reg *adapter.Registry, files map[string][]byte) *snapshot.Snapshot {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := loader.LoadWith([]string{dir}, reg, nil, "test", loader.Options{UnsetEnvWarning: true})
	for _, d := range l.Diagnostics {
		if d.Severity == hcl.DiagError {
			t.Errorf("generated config: %s", d.Error())
		}
	}
	if l.Snapshot == nil {
		t.Fatal("the generated config does not load")
	}
	t.Cleanup(func() { l.Snapshot.Close() })
	return l.Snapshot
}

// Connect serves s to a go-sdk client over in-memory transports.
func Connect(t *testing.T, s *snapshot.Snapshot) *mcp.ClientSession {
	t.Helper()
	cur := &snapshot.Current{}
	cur.Swap(s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := serve.New(cur, serve.Options{}).SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "import-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Call calls a tool; a protocol error fails the test (a tool error is the
// caller's to check).
func Call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// Text is the text of a result's text content.
func Text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
