package reload_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
)

// BenchmarkWriteToNotification measures the latency from writing a config
// file to a connected legacy HTTP client receiving tools/list_changed,
// including the watcher's debounce. It reports the median and p99.
func BenchmarkWriteToNotification(b *testing.B) {
	t := &testing.T{}
	e := start(t, map[string]string{"tools.hcl": tool("a", "A")}, func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} })
	e.t = t
	c := e.connect("legacy-http")
	path := filepath.Join(e.dir, "tools.hcl")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		write(t, path, tool("a", fmt.Sprintf("A%d", i)))
		select {
		case <-c.signal:
		case <-time.After(5 * time.Second):
			b.Fatalf("no notification for write %d", i)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func manyTools(n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, `tool "tool_%05d" {
  description = "Tool number %d"
  param "id" {
    type    = "integer"
    minimum = 1
  }
  param "name" {
    type     = "string"
    pattern  = "^[a-z]+$"
    required = false
  }
  result {
    structured = "{id: args.id}"
  }
}
`, i, i)
	}
	return sb.String()
}

// BenchmarkLoad1000Tools measures loading and compiling a 1,000-tool config:
// the work of one reload.
func BenchmarkLoad1000Tools(b *testing.B) { benchLoad(b, 1000) }

// BenchmarkLoad10000Tools is the same at 10,000 tools.
func BenchmarkLoad10000Tools(b *testing.B) { benchLoad(b, 10000) }

func benchLoad(b *testing.B, n int) {
	dir := b.TempDir()
	path := filepath.Join(dir, "tools.hcl")
	write(&testing.T{}, path, manyTools(n))
	reg := adapter.NewRegistry()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := loader.Load([]string{path}, reg, nil, "bench")
		if l.Snapshot == nil {
			b.Fatal(l.Diagnostics)
		}
	}
}

// BenchmarkToolsList1000 measures tools/list at 1,000 tools over a legacy
// HTTP session, end to end.
func BenchmarkToolsList1000(b *testing.B) {
	t := &testing.T{}
	e := start(t, map[string]string{"tools.hcl": manyTools(1000)}, func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} })
	c := e.connect("legacy-http")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := c.session.ListTools(ctx, &mcp.ListToolsParams{})
		if err != nil || len(res.Tools) != 1000 {
			b.Fatalf("tools/list: %v (%d tools)", err, len(res.Tools))
		}
	}
}
