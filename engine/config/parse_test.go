package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/funcs"
)

// Parsing in pieces gives the very body a whole-file parse gives: the same
// blocks with the same ranges, hence the same decoded config and the same
// diagnostics. Pieces are made tiny here so that every config is cut.
func TestParseInPiecesMatchesWhole(t *testing.T) {
	sources := map[string]string{
		"heredoc with a cut-like line inside": `
tool "a" {
  description = <<EOT
first
}
tool "not a block" {
EOT
}
tool "b" {
  description = "b"
}
`,
		"block comment with a cut-like line inside": `
tool "a" {
  description = "a"
}
/*
}
tool "commented" {
*/
tool "b" {
  description = "b"
}
`,
		"badly indented": `
tool "a" {
description = "a"
param "p" {
type = "string"
}
title = "T"
}
tool "b" {
description = "b"
}
`,
		"top-level attributes": `
x = 1
tool "a" {
  description = "a"
}
y = 2
tool "b" {
  description = "b"
}
x = 3
`,
		"syntax error late": `
tool "a" {
  description = "a"
}
tool "b" {
  description = "b"
}
tool "c" {
  description = 
}
`,
		"CRLF":             "tool \"a\" {\r\n  description = \"a\"\r\n}\r\ntool \"b\" {\r\n  description = \"b\"\r\n}\r\n",
		"no final newline": "tool \"a\" {\n  description = \"a\"\n}\ntool \"b\" {\n  description = \"b\"\n}",
		"many tools":       manyToolsForTest(50),
	}
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
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			whole, wantDiags := parseWhole([]byte(src), "test.hcl")
			pieces, gotDiags := parseConfig([]byte(src), "test.hcl", 1)
			if w, g := diagStrings(wantDiags), diagStrings(gotDiags); !slices.Equal(w, g) {
				t.Fatalf("parse diagnostics differ:\nwhole:  %q\npieces: %q", w, g)
			}
			if wantDiags.HasErrors() {
				return
			}
			wb, pb := whole.(*hclsyntax.Body), pieces.(*hclsyntax.Body)
			if !reflect.DeepEqual(wb.Blocks, pb.Blocks) {
				t.Errorf("blocks differ")
			}
			if !reflect.DeepEqual(wb.Attributes, pb.Attributes) {
				t.Errorf("attributes differ")
			}
			if wb.SrcRange != pb.SrcRange || wb.EndRange != pb.EndRange {
				t.Errorf("body ranges differ: %v %v, %v %v", wb.SrcRange, wb.EndRange, pb.SrcRange, pb.EndRange)
			}
			ectx := &hcl.EvalContext{Functions: funcs.Table(".")}
			var want, got fileContent
			wd := decodeChecked(whole, ectx, &want, testRest)
			gd := decodeChecked(pieces, ectx, &got, testRest)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded configs differ")
			}
			if w, g := diagStrings(wd), diagStrings(gd); !slices.Equal(w, g) {
				t.Errorf("decode diagnostics differ:\nwhole:  %q\npieces: %q", w, g)
			}
		})
	}
}

func TestCutPoints(t *testing.T) {
	src := "tool \"a\" {\n}\ntool \"b\" {\n  x = 1\n}\n\n# c\ntool \"c\" {\n}\n  tool \"d\" {\n}\nx = 1\ntool \"e\" {\n  }\ntool \"f\" {\n}\n"
	got := cutPoints([]byte(src), 1)
	var at []string
	for _, c := range got {
		at = append(at, strings.SplitN(src[c:], "\n", 2)[0])
	}
	// Not before "d" (indented), "e" (after an attribute) or "f" (after an
	// indented brace); a blank line and a comment may come between blocks.
	want := []string{`tool "b" {`, `# c`, `tool "c" {`, `x = 1`}
	if !slices.Equal(at, want) {
		t.Errorf("cuts before %q, want %q", at, want)
	}
	if cutPoints([]byte(src), 1<<20) != nil {
		t.Error("a small file was cut")
	}
}

func manyToolsForTest(n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "tool \"t%d\" {\n  description = \"Tool %d\"\n  param \"id\" {\n    type = \"integer\"\n  }\n  result {\n    structured = \"{id: args.id}\"\n  }\n}\n", i, i)
	}
	return sb.String()
}
