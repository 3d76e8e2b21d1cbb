package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

func BenchmarkCall(b *testing.B) { benchCall(b, adapter.NewRegistry(), benchTools) }

// benchSecrets makes the snapshot hold five secrets (read with env() for an
// adapter block), so that every result goes through the redactor: compare
// with BenchmarkCall for the cost of redaction per call.
const benchSecrets = `
tool "holder" {
  description = "Holds secrets."
  fake {
    mode = "say"
    say  = join(",", [env("BENCH_S1"), env("BENCH_S2"), env("BENCH_S3"), env("BENCH_S4"), env("BENCH_S5")])
  }
}
`

func BenchmarkCallRedacted(b *testing.B) {
	for i, v := range []string{"ghp_0123456789abcdefABCDEF0123456789abcd", "sk-live-51H8xYzabcdefghijklmnop", "postgres://u:p4ssw0rd@db/x", "hunter2hunter2", "eyJhbGciOiJIUzI1NiJ9.e30.abc"} {
		b.Setenv(fmt.Sprintf("BENCH_S%d", i+1), v)
	}
	benchCall(b, newFake().register(), benchTools+benchSecrets)
}

func benchCall(b *testing.B, reg *adapter.Registry, src string) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
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
		{"echo_4KiB", `{"text":"` + strings.Repeat(`abc \\/ 100% \"k\": 1, `, 4096/20) + `"}`},
		{"shaped_100_tags", `{"id":42,"tags":[` + strings.Repeat(`"some-tag-value",`, 99) + `"last"]}`},
	} {
		t, ok := s.Tool(strings.Split(bm.tool, "_")[0])
		if !ok {
			b.Fatalf("no tool %s", bm.tool)
		}
		args := json.RawMessage(bm.args)
		b.Run(bm.tool, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := call(t, ctx, args, nil); res.IsError {
					b.Fatalf("%+v", res.Content[0])
				}
			}
		})
	}
}
