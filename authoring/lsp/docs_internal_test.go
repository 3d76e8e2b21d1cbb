package lsp

import (
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
)

func testRegistry() *adapter.Registry {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	return reg
}

// Every key of the reference table names a block or attribute that the
// schema has, so that a renamed attribute cannot leave stale hover text.
func TestReferenceKeysExist(t *testing.T) {
	s := New(testRegistry(), Options{})
	adapterRoots := map[string]*blockSchema{}
	for typ, b := range s.root.blocks {
		if b.adapter != "" {
			adapterRoots[typ] = b
		}
	}
	for typ, b := range s.root.blocks["tool"].blocks {
		if b.adapter != "" {
			adapterRoots[typ] = b
		}
	}
	for _, e := range reference {
		parts := strings.Split(e.key, ".")
		sc := s.root
		if r, ok := adapterRoots[parts[0]]; ok {
			sc = r
			parts = parts[1:]
		} else {
			sc = s.root.blocks[parts[0]]
			parts = parts[1:]
		}
		for i, p := range parts {
			if sc == nil {
				break
			}
			if next, ok := sc.blocks[p]; ok {
				sc = next
				continue
			}
			if _, ok := sc.attr(p); ok && i == len(parts)-1 {
				continue
			}
			sc = nil
		}
		if sc == nil {
			t.Errorf("reference key %q names no block or attribute of the schema", e.key)
		}
	}
}

// The root schema offers exactly the top-level blocks the loader accepts:
// each is not "Unsupported block type" to it, and a made-up one is.
func TestRootSchemaMatchesLoader(t *testing.T) {
	reg := testRegistry()
	s := New(reg, Options{})
	blocks := config.Blocks{Adapters: reg.ToolBlocks(), Backends: reg.BackendBlocks()}
	for _, typ := range append(s.root.blockNames(), "no_such_block") {
		src := typ + " {\n}\n"
		if len(s.root.labels[typ]) > 0 || typ == "no_such_block" {
			src = typ + ` "x" {` + "\n}\n"
		}
		dir := t.TempDir()
		name := dir + "/a.hcl"
		if err := writeFile(name, src); err != nil {
			t.Fatal(err)
		}
		_, diags := config.Load([]string{name}, blocks)
		unsupported := false
		for _, d := range diags {
			if strings.Contains(d.Summary, "Unsupported block type") {
				unsupported = true
			}
		}
		if unsupported != (typ == "no_such_block") {
			t.Errorf("%s: loader says unsupported=%v: %v", typ, unsupported, diags)
		}
	}
}

func TestCursorFrames(t *testing.T) {
	src := "tool \"a\" {\n  headers = {\n    x = 1\n  }\n  sql {\n    q = \"${args.x}\"\n    \n"
	tests := []struct {
		find string
		want []string
		ok   bool
	}{
		{"    x = 1", nil, false},
		{"    q =", []string{"tool", "sql"}, true},
		{"  sql", []string{"tool"}, true},
	}
	for _, tt := range tests {
		off := strings.Index(src, tt.find)
		got, ok := cursorAt([]byte(src), off+len(tt.find)).blocks()
		if ok != tt.ok || strings.Join(got, ".") != strings.Join(tt.want, ".") {
			t.Errorf("at %q: %v %v, want %v %v", tt.find, got, ok, tt.want, tt.ok)
		}
	}
	// The tokens of an unterminated file still give the path.
	if _, diags := hclsyntax.ParseConfig([]byte(src), "", hcl.InitialPos); !diags.HasErrors() {
		t.Fatal("the test text should not parse")
	}
}

func writeFile(name, src string) error { return os.WriteFile(name, []byte(src), 0o644) }
