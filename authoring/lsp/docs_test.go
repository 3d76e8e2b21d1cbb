package lsp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/authoring/lsp"
)

const (
	beginRef = "<!-- begin lsp reference -->\n"
	endRef   = "<!-- end lsp reference -->\n"
)

// The hover text and docs/config.md's "Editor reference" are one table:
// the section is generated from authoring/lsp/docs.go, and this test fails
// when it was edited by hand or the table changed without regenerating it
// (MCPD_UPDATE_DOCS=1 rewrites it).
func TestDocsReferenceUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "config.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, beginRef), strings.Index(doc, endRef)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", path, beginRef, endRef)
	}
	want := lsp.ReferenceMarkdown()
	if got := doc[i+len(beginRef) : j]; got != want {
		if os.Getenv("MCPD_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(path, []byte(doc[:i+len(beginRef)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("docs/config.md's editor reference is not what authoring/lsp/docs.go generates; run MCPD_UPDATE_DOCS=1 go test ./authoring/lsp -run TestDocsReferenceUpToDate")
	}
}
