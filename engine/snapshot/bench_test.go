package snapshot_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// The tools bench/configs/static.hcl serves to the load generator, plus one
// with an expr-shaped structured result: the per-call path of Tool.Call
// (validate, bind, shape) without any transport.
const benchTools = `
tool "static" {
  description = "Returns a fixed text."
  param "name" {
    type       = "string"
    max_length = 64
    required   = false
  }
  result {
    content "text" {
      text = "This is a static response."
    }
  }
}

tool "echo" {
  description = "Returns its argument."
  param "text" {
    type = "string"
  }
  result {
    content "text" {
      text = args.text
    }
  }
}

tool "shaped" {
  description = "Returns a structured result."
  param "id" {
    type    = "integer"
    minimum = 1
  }
  param "tags" {
    type     = "array"
    items    = { type = "string" }
    required = false
  }
  result {
    structured = "{id: args.id, tags: args.tags ?? [], even: int(args.id) % 2 == 0}"
  }
}
`

func BenchmarkCall(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(benchTools), 0o644); err != nil {
		b.Fatal(err)
	}
	reg := adapter.NewRegistry()
	cfg, diags := config.Load([]string{dir}, config.Blocks{Adapters: reg.ToolBlocks(), Backends: reg.BackendBlocks()})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	s, diags := snapshot.Build(cfg, reg, nil, "bench")
	if s == nil {
		b.Fatal(diags)
	}
	ctx := context.Background()
	for _, bm := range []struct{ tool, args string }{
		{"static", `{"name":"bench"}`},
		{"echo", `{"text":"hello"}`},
		{"shaped", `{"id":42,"tags":["a","b"]}`},
	} {
		t, ok := s.Tool(bm.tool)
		if !ok {
			b.Fatalf("no tool %s", bm.tool)
		}
		args := json.RawMessage(bm.args)
		b.Run(bm.tool, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := t.Call(ctx, args, nil); res.IsError {
					b.Fatalf("%+v", res.Content[0])
				}
			}
		})
	}
}
