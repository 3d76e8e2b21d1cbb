package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	protocol "github.com/tliron/glsp/protocol_3_16"
)

// bigDir writes a config directory of n SQL tools on one database.
func bigDir(b *testing.B, n int) (dir, file string, src []byte) {
	dir = b.TempDir()
	var sb strings.Builder
	sb.WriteString("database \"shop\" {\n  driver = \"sqlite\"\n  dsn    = \"file:" + dir + "/x.db\"\n}\n\n")
	for i := range n {
		fmt.Fprintf(&sb, "tool \"t%d\" {\n  description = \"Tool %d\"\n  param \"id\" {\n    type    = \"integer\"\n    minimum = 1\n  }\n  sql {\n    database = \"shop\"\n    query    = \"SELECT id FROM books WHERE id = :id\"\n    \n  }\n}\n\n", i, i)
	}
	file = filepath.Join(dir, "tools.hcl")
	src = []byte(sb.String())
	if err := os.WriteFile(file, src, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, file, src
}

// BenchmarkLoadDir is one diagnostics pass (what each debounced edit
// costs) over a directory of 200 tools.
func BenchmarkLoadDir(b *testing.B) {
	dir, _, _ := bigDir(b, 200)
	s := New(testRegistry(), Options{})
	b.ReportAllocs()
	for b.Loop() {
		s.loadDir(dir)
	}
}

// BenchmarkCompletion is one completion request in the last tool's sql
// block of a 200-tool file.
func BenchmarkCompletion(b *testing.B) {
	_, file, src := bigDir(b, 200)
	s := New(testRegistry(), Options{})
	s.docs[file] = src
	i := strings.LastIndex(string(src), "    \n")
	pos := protocol.Position{Line: protocol.UInteger(strings.Count(string(src[:i]), "\n")), Character: 4}
	if items := s.complete(file, pos); len(items) == 0 {
		b.Fatal("no completion")
	}
	b.ReportAllocs()
	for b.Loop() {
		s.complete(file, pos)
	}
}
