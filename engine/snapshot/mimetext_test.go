package snapshot_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// A file resource of a textual MIME type reaches the client as text, not
// as a base64 blob; binary types and invalid UTF-8 stay blobs.
func TestFileResourceTextOrBlob(t *testing.T) {
	tests := []struct {
		mime   string
		data   string
		isText bool
	}{
		{"application/sql", "CREATE TABLE t (id int);\n", true},
		{"text/plain; charset=utf-8", "hello", true},
		{"Text/Markdown", "# hi", true},
		{"application/json", `{"a":1}`, true},
		{"application/ld+json", `{"a":1}`, true},
		{"application/xml", "<a/>", true},
		{"image/svg+xml", "<svg/>", true},
		{"application/yaml", "a: 1", true},
		{"application/x-yaml", "a: 1", true},
		{"application/javascript", "let a = 1", true},
		{"application/toml", "a = 1", true},
		{"application/octet-stream", "hello", false},
		{"image/png", "\x89PNG", false},
		{"application/sql", "\xff\xfe not utf-8", false},
		{"", "plain", true},
	}
	for _, tc := range tests {
		t.Run(tc.mime, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "data"), []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			mt := ""
			if tc.mime != "" {
				mt = `mime_type = "` + tc.mime + `"`
			}
			cfg := `resource "r" {
  uri = "demo://r"
  ` + mt + `
  file = "data"
}
`
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			l := loader.Load([]string{dir}, adapter.NewRegistry(), nil, "test")
			if l.Snapshot == nil {
				t.Fatalf("load: %v", l.Diagnostics)
			}
			defer l.Snapshot.Close()
			res, found, err := l.Snapshot.ReadResource(context.Background(), &snapshot.ReadRequest{URI: "demo://r"})
			if !found || err != nil {
				t.Fatalf("read: found %v, %v", found, err)
			}
			c := res.Contents[0]
			if tc.isText && (c.Text != tc.data || c.Blob != nil) {
				t.Errorf("want text %q, got text %q blob %q", tc.data, c.Text, c.Blob)
			}
			if !tc.isText && (c.Text != "" || string(c.Blob) != tc.data) {
				t.Errorf("want blob %q, got text %q blob %q", tc.data, c.Text, c.Blob)
			}
		})
	}
}
