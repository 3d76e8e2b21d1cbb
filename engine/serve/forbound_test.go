package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/adapters/sqladapter"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// forConfig builds text from a for expression over the call's arguments in
// each kind of call-time template: an HTTP body, a shell argv
// and stdin, an SQL param, a content template of a tool without adapter, a prompt.
const forConfig = `
http_backend "echo" {
  base_url = "BASE"
}
tool "http_for" {
  description = "Posts a body built by a for."
  param "l" { type = "array" }
  param "s" { type = "string" }
  http {
    backend = "echo"
    method  = "POST"
    path    = "/"
    body    = { items = [for x in args.l : args.s] }
  }
}
tool "shell_for" {
  description = "Cats a stdin built by a for."
  param "l" { type = "array" }
  param "s" { type = "string" }
  shell {
    command = ["head", "-c", "%{for x in args.l}1%{endfor}"]
    stdin   = "%{for x in args.l}${args.s}%{endfor}"
  }
}
database "fordb" {
  driver = "sqlite"
  dsn    = "for.db"
}
tool "sql_for" {
  description = "Selects a param built by a for."
  param "l" { type = "array" }
  param "s" { type = "string" }
  sql {
    database = "fordb"
    query    = "SELECT :joined AS v"
    params   = { joined = "%{for x in args.l}${args.s}%{endfor}" }
  }
}
tool "text_for" {
  description = "Returns text built by a for."
  param "l" { type = "array" }
  param "s" { type = "string" }
  result {
    content "text" {
      text = "%{for x in args.l}${args.s}%{endfor}"
    }
  }
}
tool "slow_for" {
  description = "Builds little, slowly."
  timeout     = "300ms"
  param "l" { type = "array" }
  param "s" { type = "string" }
  result {
    content "text" {
      text = jsonencode([for a in args.l : length([for b in args.l : length(format("%s", args.s))])])
    }
  }
}
prompt "prompt_for" {
  description = "A message built by a for."
  argument "l" {}
  argument "s" {}
  message {
    text = "%{for x in split(",", args.l)}${args.s}%{endfor}"
  }
}
`

// A for expression over the call's values that would build a product of
// their sizes (1 MiB × 64 Ki items = 64 GiB) is a tool error naming the
// limit, for every kind of template, and the server keeps serving; the
// same templates over ten items work.
func TestForExpressionBound(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"got":` + string(b) + `}`))
	}))
	defer backend.Close()
	dir := t.TempDir()
	cfg := strings.Replace(forConfig, "BASE", backend.URL, 1)
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := adapter.NewRegistry()
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.New())
	reg.Register("sql", sqladapter.New())
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	srv := serve.New(cur, serve.Options{Logger: quiet, ListTTL: 5 * time.Second})
	ts := httptest.NewServer(srv.HTTPHandler(serve.HTTPOptions{}))
	defer ts.Close()
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, modern, nil)

	ten := []any{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	many := make([]any, 64<<10)
	for i := range many {
		many[i] = "a"
	}
	big := strings.Repeat("x", 1<<20)
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		t.Cleanup(cancel)
		return c
	}
	for _, tc := range []struct{ tool, ten string }{
		{"http_for", `"items":["yz","yz","yz","yz","yz","yz","yz","yz","yz","yz"]`},
		{"shell_for", strings.Repeat("yz", 10)},
		{"sql_for", strings.Repeat("yz", 10)},
		{"text_for", strings.Repeat("yz", 10)},
	} {
		tool := tc.tool
		t.Run(tool, func(t *testing.T) {
			res, err := cs.CallTool(ctx(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"l": many, "s": big}})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(res); !res.IsError || !strings.Contains(got, "MaxForBytes") {
				t.Fatalf("got %.300q (isError %v), want a tool error naming MaxForBytes", got, res.IsError)
			}
			// The server survives and the same tool works on ten items.
			res, err = cs.CallTool(ctx(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"l": ten, "s": "yz"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(res); res.IsError || !strings.Contains(got, tc.ten) {
				t.Fatalf("ten items: got %.300q (isError %v)", got, res.IsError)
			}
		})
	}
	// 810,000 copies of 1 MiB build little but would take hours: the
	// tool's timeout stops the for.
	t.Run("slow_for", func(t *testing.T) {
		res, err := cs.CallTool(ctx(), &mcp.CallToolParams{Name: "slow_for", Arguments: map[string]any{"l": many[:900], "s": big}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); !res.IsError || !strings.Contains(got, "the call ended (tool timeout)") {
			t.Fatalf("got %.300q (isError %v), want the timeout", got, res.IsError)
		}
	})
	t.Run("prompt_for", func(t *testing.T) {
		_, err := cs.GetPrompt(ctx(), &mcp.GetPromptParams{Name: "prompt_for", Arguments: map[string]string{"l": strings.Repeat("a,", 64<<10), "s": big}})
		if err == nil || !strings.Contains(err.Error(), "MaxForBytes") {
			t.Fatalf("got %v, want an error naming MaxForBytes", err)
		}
		res, err := cs.GetPrompt(ctx(), &mcp.GetPromptParams{Name: "prompt_for", Arguments: map[string]string{"l": "a,b,c", "s": "yz"}})
		if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "yzyzyz" {
			t.Fatalf("got %v, %v", res, err)
		}
	})
}
