package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/ident"
)

// decodeChecked must decode exactly as gohcl.DecodeBody: the same values,
// and a diagnostic (in hclbody's words, not gohcl's) at each place gohcl
// reports one (gohcl reports them in map order, so they are compared as
// sets). It may report more: what gohcl leaves to the rest of a body with
// a remain field (a tool's unknown argument) it checks against the rest's
// schema.
func TestDecodeBodyMatchesGohcl(t *testing.T) {
	sources := map[string]string{
		"every block": `
server {
  name    = "s"
  version = "1"
}
tool "t" {
  title       = "T"
  description = "d"
  annotations {
    read_only = true
    title     = "A"
  }
  param "a" {
    type     = "integer"
    minimum  = 1
    required = false
  }
  param "b" {
    enum = ["x", "y"]
  }
  input_schema = null
  result {
    structured = "{a: args.a}"
    content "text" {
      text = "hi ${args.a}"
    }
    content "image" {
      data      = "AA=="
      mime_type = "image/png"
    }
  }
  progress {
    steps    = [0, 100]
    interval = "1ms"
  }
  http {
    url = "https://example.com"
  }
}
resource "r" {
  uri  = "test://r"
  text = "x"
}
resource_template "rt" {
  uri_template = "test://{id}"
  text         = "x"
}
prompt "p" {
  argument "x" {
    required = true
  }
  message {
    role = "user"
    text = "hello"
  }
}
database "db" {
  driver = "sqlite"
}
`,
		"duplicate single block": `
tool "t" {
  description = "d"
  result {
    text = "1"
  }
  result {
    text = "2"
  }
}
`,
		"missing required attribute": `
tool "t" {
  progress {
    total = 3
  }
}
resource "r" {
  text = "no uri"
}
`,
		"wrong types": `
tool "t" {
  description = ["not", "a", "string"]
  annotations {
    read_only = "maybe"
  }
  param "p" {
    required = "sometimes"
    nullable = 3
  }
}
`,
		"missing labels and unknown attributes": `
tool {
  description = "no name"
}
tool "u" {
  nope = 1
  param "q" {
    typo = "string"
  }
}
server {
  unknown = true
}
`,
		"function calls": `
tool "f" {
  description = upper("shout")
  title       = env("MCPD_DECODE_TEST_UNSET", "fallback")
}
`,
	}
	// Every config the repository ships or tests with, too.
	for _, glob := range []string{"../loader/testdata/broken/*.hcl", "../loader/testdata/broken/*/*.hcl", "../../examples/*/*.hcl", "testdata/*.hcl", "testdata/*/*.hcl"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sources[f] = string(b)
		}
	}
	if len(sources) < 10 {
		t.Fatalf("only %d configs found", len(sources))
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			f, diags := hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Skip("does not parse:", diags.Error())
			}
			ectx := &hcl.EvalContext{Functions: funcs.Table(".")}
			var want, got fileContent
			wantDiags := gohcl.DecodeBody(f.Body, ectx, &want)
			gotDiags := decodeChecked(f.Body, ectx, &got, testRest)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded values differ from gohcl's")
			}
			if w, g := diagPlaces(wantDiags), diagPlaces(gotDiags); !subset(w, g) {
				t.Errorf("diagnostics differ:\ngohcl: %q\nmcpd:  %q", w, g)
			}
		})
	}
}

// testRest is the rest of the bodies decodeChecked leaves to others, as
// the loader builds it from the registry, for the blocks the tests' configs
// use.
var testRest = func() map[reflect.Type]*hcl.BodySchema {
	backends := &hcl.BodySchema{}
	for _, b := range []string{"http_backend", "sql_backend", "database", "mcp_server"} {
		backends.Blocks = append(backends.Blocks, hcl.BlockHeaderSchema{Type: b, LabelNames: []string{"name"}})
	}
	adapters := &hcl.BodySchema{}
	for _, a := range []string{"http", "shell", "sql", "mcp", "builtin"} {
		adapters.Blocks = append(adapters.Blocks, hcl.BlockHeaderSchema{Type: a})
	}
	return map[reflect.Type]*hcl.BodySchema{
		reflect.TypeFor[fileContent](): backends, reflect.TypeFor[Tool](): adapters,
		reflect.TypeFor[Resource](): adapters, reflect.TypeFor[ResourceTemplate](): adapters,
	}
}()

// diagPlaces are the severities and subjects of diags, sorted.
func diagPlaces(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		s := fmt.Sprint(d.Severity)
		if d.Subject != nil {
			s += " @" + d.Subject.String()
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

func diagStrings(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		s := d.Error()
		if d.Subject != nil {
			s += " @" + d.Subject.String()
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// BenchmarkDecode compares decoding one 100-tool file with gohcl and with
// decodeChecked.
func BenchmarkDecode(b *testing.B) {
	var src []byte
	for i := 0; i < 100; i++ {
		src = append(src, `
tool "t`+string(rune('a'+i%26))+`" {
  description = "d"
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
`...)
	}
	f, diags := hclsyntax.ParseConfig(src, "bench.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	ectx := &hcl.EvalContext{Functions: funcs.Table(".")}
	b.Run("gohcl", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var fc fileContent
			gohcl.DecodeBody(f.Body, ectx, &fc)
		}
	})
	// What the loader runs: the decoder with hclbody's checks.
	rest := map[reflect.Type]*hcl.BodySchema{
		reflect.TypeFor[fileContent](): {}, reflect.TypeFor[Tool](): {},
		reflect.TypeFor[Resource](): {}, reflect.TypeFor[ResourceTemplate](): {},
	}
	b.Run("decodeChecked", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var fc fileContent
			decodeChecked(f.Body, ectx, &fc, rest)
		}
	})
}

// The name rules match the regular expressions they replace.
func TestNameRules(t *testing.T) {
	toolRE := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	identRE := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)
	names := []string{"", "a", "A", "_", "0", "9lives", ".x", "-x", "a.b-c_d", "a b", "é", "a\\n", "tool/x", "x!",
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129), "_" + strings.Repeat("9", 127)}
	for _, n := range names {
		if got, want := ident.ToolName(n), toolRE.MatchString(n); got != want {
			t.Errorf("ident.ToolName(%q) = %v, want %v", n, got, want)
		}
		if got, want := validIdent(n), identRE.MatchString(n); got != want {
			t.Errorf("validIdent(%q) = %v, want %v", n, got, want)
		}
	}
}
