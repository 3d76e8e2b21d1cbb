package openapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/authoring/importer/openapi"
)

// A document read from a file may $ref the files of its own directory
// tree, not the rest of the disk, whose content would be copied into the
// generated config; --ref-root (LoadOptions.RefRoot) widens the tree.
func TestFileRefsConfined(t *testing.T) {
	pets, err := os.ReadFile(filepath.Join("testdata", "petstore-3.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	top := t.TempDir()
	spec := filepath.Join(top, "spec")
	secret := filepath.Join(top, "secret")
	for _, d := range []string{filepath.Join(spec, "schemas"), secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const schema = "Pets:\n  type: array\n  description: TOP-SECRET-CONTENT\n  items:\n    type: string\n"
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(secret, "pets.yaml"), schema)
	write(filepath.Join(spec, "schemas", "pets.yaml"), schema)
	if err := os.Symlink(filepath.Join(secret, "pets.yaml"), filepath.Join(spec, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	withRef := func(name, ref string) string {
		p := filepath.Join(spec, name)
		write(p, strings.Replace(string(pets), `$ref: "#/components/schemas/Pets"`, `$ref: "`+ref+`#/Pets"`, 1))
		return p
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, ref string
		root      string
		ok        bool
	}{
		{name: "a file in the tree", ref: "schemas/pets.yaml", ok: true},
		{name: "a relative path out of the tree", ref: "../secret/pets.yaml"},
		{name: "an absolute file URL", ref: "file://" + filepath.ToSlash(filepath.Join(secret, "pets.yaml"))},
		{name: "an absolute path", ref: filepath.ToSlash(filepath.Join(secret, "pets.yaml"))},
		{name: "a symbolic link out of the tree", ref: "link.yaml"},
		{name: "out of the tree, with the tree widened", ref: "../secret/pets.yaml", root: top, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := openapi.LoadWith(ctx, withRef(strings.ReplaceAll(tc.name, " ", "_")+".yaml", tc.ref), openapi.LoadOptions{RefRoot: tc.root})
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), "may only refer to files under") {
					t.Fatalf("loaded (%v), want the reference refused", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := openapi.Convert(doc, openapi.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.HCL), "TOP-SECRET-CONTENT") {
				t.Errorf("the referenced schema is not in the config:\n%s", res.HCL)
			}
		})
	}
}
