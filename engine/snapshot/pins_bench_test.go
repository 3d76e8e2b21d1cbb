package snapshot_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/lock"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// pinnedContrib is contrib whose block declares on_drift (adapter.DriftPolicy).
type pinnedContrib struct{ contrib }

func (c *pinnedContrib) DecodeBackend(*adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	return &pinnedContribConfig{contribConfig{c: &c.contrib}}, nil
}

type pinnedContribConfig struct{ contribConfig }

func (*pinnedContribConfig) OnDrift() (string, bool) { return snapshot.PolicyQuarantine, true }

// BenchmarkRebuildPinned1000 is the cost of pin checking in a rebuild of a
// config whose upstream lists 1,000 tools, all locked: "unpinned" is the
// rebuild without a lock file, "pinned" with one. A rebuild that lists
// nothing new digests nothing (the digests are kept by listing entry), so
// the difference is a map lookup per tool; engine/lock's BenchmarkCheck1000
// is the cost when the whole listing is new.
func BenchmarkRebuildPinned1000(b *testing.B) {
	be := &contribBackend{}
	var defs []lock.Def
	for i := 0; i < 1000; i++ {
		up := &mcp.Tool{Name: fmt.Sprintf("tool_%d", i), Description: fmt.Sprintf("Tool number %d: does one thing.", i),
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}}}
		be.tools = append(be.tools, adapter.ContributedTool{Name: "up_" + up.Name, Description: up.Description, Handler: argsHandler{},
			InputSchema: up.InputSchema.(map[string]any), Declared: up})
		d, err := lock.NewDef("contrib.up", lock.KindTool, up.Name, up, "name")
		if err != nil {
			b.Fatal(err)
		}
		defs = append(defs, d)
	}
	for _, pinned := range []bool{false, true} {
		reg := adapter.NewRegistry()
		if pinned {
			reg.Register("contrib_tool", &pinnedContrib{contrib{backend: be}})
		} else {
			reg.Register("contrib_tool", &contrib{backend: be})
		}
		name := map[bool]string{false: "unpinned", true: "pinned"}[pinned]
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(`contrib "up" {}`+"\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			if pinned {
				if err := lock.Write(filepath.Join(dir, lock.FileName), lock.New(defs)); err != nil {
					b.Fatal(err)
				}
			}
			prev := loader.Load([]string{dir}, reg, nil, "test").Snapshot
			if n := len(prev.Tools); n != 1000 {
				b.Fatalf("%d tools served", n)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l := loader.Load([]string{dir}, reg, prev, "test")
				if len(l.Snapshot.Tools) != 1000 || len(l.Snapshot.Drifts()) != 0 {
					b.Fatalf("%d tools, %d drifts", len(l.Snapshot.Tools), len(l.Snapshot.Drifts()))
				}
				prev = l.Snapshot
			}
		})
	}
}
