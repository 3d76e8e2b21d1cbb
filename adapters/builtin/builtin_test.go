package builtin_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

func registry() *adapter.Registry {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	return reg
}

// Each shipped adapter's block, with the attributes every test needs and
// room for the one under test (%s).
var blocks = map[string]string{
	"http":  "http {\n  url = \"https://api.example.com/x\"\n  %s\n}",
	"shell": "shell {\n  command = [\"true\"]\n  %s\n}",
	"sql": "database \"main\" {\n  driver = \"sqlite\"\n  dsn    = \"file:t.db\"\n}\n" +
		"sql {\n  database = \"main\"\n  query    = \"SELECT 1\"\n  %s\n}",
}

// The same mistake gets the same diagnostic in every adapter: they decode
// with one toolkit (engine/adapter's Decoder).
func TestSameMistakeSameDiagnostic(t *testing.T) {
	reg := registry()
	dir := t.TempDir()
	tests := []struct {
		name, attr    string
		summary, want string
	}{
		{"unparsable duration", `timeout = "soon"`, "Invalid duration", `timeout: "soon" is not a duration; use a value such as "10s", "1m30s" or "250ms".`},
		{"duration not a string", `timeout = 10`, "Invalid duration", `timeout must be a duration string such as "10s", "1m30s" or "250ms", got number.`},
		{"duration from args", `timeout = "${args.n}s"`, "Value must be known at load time", `timeout cannot depend on the call's arguments; remove the reference to "args.n".`},
		{"null duration", `timeout = null`, "Invalid duration", `timeout must be a duration string such as "10s", "1m30s" or "250ms", got null.`},
	}
	for _, tt := range tests {
		for block, src := range blocks {
			t.Run(tt.name+"/"+block, func(t *testing.T) {
				a, _ := reg.Adapter(block)
				_, diags := adaptertest.Compile(t, a, block, adaptertest.Config{
					Src: strings.Replace(src, "%s", tt.attr, 1), Dir: dir, Params: map[string]string{"n": "integer"},
				})
				for _, d := range diags {
					if d.Severity == hcl.DiagError && d.Summary == tt.summary && d.Detail == tt.want {
						return
					}
				}
				t.Errorf("no %q: %q among:\n%s", tt.summary, tt.want, diags.Error())
			})
		}
	}
}

// An unknown backend is answered alike by every adapter that has
// backends, with the block to declare.
func TestUnknownBackendSameDiagnostic(t *testing.T) {
	reg := registry()
	for block, src := range map[string]string{
		"http": "http {\n  backend = \"nope\"\n}",
		"sql":  "sql {\n  database = \"nope\"\n  query    = \"SELECT 1\"\n}",
	} {
		a, _ := reg.Adapter(block)
		typ := a.(adapter.BackendAdapter).BackendBlock()
		_, diags := adaptertest.Compile(t, a, block, adaptertest.Config{Src: src, Dir: t.TempDir()})
		want := `There is no ` + typ + ` named "nope"; declare it at the top level: ` + typ + ` "nope" {`
		if ok, text := adaptertest.DiagContains(diags, want); !ok || !strings.Contains(text, "Unknown "+typ) {
			t.Errorf("%s: want %q in:\n%s", block, want, text)
		}
	}
}

// Every shipped adapter declares its blocks' schemas (adapter.Schemaer,
// adapter.BackendSchemaer), for tools that read them (an editor's
// completion), and each schema accepts the attributes the adapter's docs
// show.
func TestSchemasDeclared(t *testing.T) {
	reg := registry()
	want := map[string][]string{
		"http":         {"backend", "method", "path", "url", "timeout", "retry"},
		"shell":        {"command", "dir", "env", "timeout", "progress"},
		"sql":          {"database", "query", "read_only", "timeout"},
		"http_backend": {"base_url", "headers", "timeout", "retry", "tls"},
		"database":     {"driver", "dsn", "max_open_conns", "seed"},
	}
	names := func(s *adapter.Schema) map[string]bool {
		m := map[string]bool{}
		for _, a := range s.Attributes {
			m[a.Name] = true
		}
		for _, b := range s.Blocks {
			m[b.Type] = b.Schema != nil
		}
		return m
	}
	for _, block := range reg.ToolBlocks() {
		a, _ := reg.Adapter(block)
		s, ok := a.(adapter.Schemaer)
		if !ok {
			t.Errorf("%s declares no schema", block)
			continue
		}
		got := names(s.ToolSchema())
		for _, n := range want[block] {
			if !got[n] {
				t.Errorf("%s schema: no %s (or its nested schema)", block, n)
			}
		}
	}
	for _, block := range reg.BackendBlocks() {
		a, _ := reg.BackendAdapter(block)
		s, ok := a.(adapter.BackendSchemaer)
		if !ok {
			t.Errorf("%s declares no schema", block)
			continue
		}
		got := names(s.BackendSchema())
		for _, n := range want[block] {
			if !got[n] {
				t.Errorf("%s schema: no %s (or its nested schema)", block, n)
			}
		}
	}
}
