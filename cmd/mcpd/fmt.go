package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/mcpd/mcpd/engine/config"
)

const fmtUsage = `usage: mcpd fmt [--check] [PATH... | -]

Rewrites config files into canonical HCL form (hclwrite's: aligned '=',
two-space indentation). A directory is walked recursively for *.hcl files
(hidden directories and testdata directories, which hold deliberately
broken files, are skipped, as Go's tools skip them; a file named as PATH
is always checked); '-' reads stdin and writes stdout, for
editors. The default PATH is the current directory.
`

// fmtCmd formats HCL files in place, or with --check only lists the files
// that are not formatted and exits 1 when there are any. A file with syntax
// errors is never rewritten: formatting it could mangle what the author is
// in the middle of typing.
func fmtCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newBareFlagSet("fmt", stderr)
	check := fs.Bool("check", false, "list files that are not formatted and exit 1 if there are any; change nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	paths := fs.Args()
	if len(paths) == 0 {
		paths = []string{"."}
	}
	if len(paths) == 1 && paths[0] == "-" {
		src, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
		out, diags := formatHCL(src, "<stdin>")
		if diags.HasErrors() {
			config.WriteDiagnostics(stderr, diags, map[string][]byte{"<stdin>": src})
			return exitError(1)
		}
		if *check {
			if !bytes.Equal(out, src) {
				fmt.Fprintln(stdout, "<stdin>")
				return exitError(1)
			}
			return nil
		}
		_, err = stdout.Write(out)
		return err
	}
	files, err := hclFiles(paths)
	if err != nil {
		return err
	}
	failed := false
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		out, diags := formatHCL(src, name)
		if diags.HasErrors() {
			config.WriteDiagnostics(stderr, diags, map[string][]byte{name: src})
			failed = true
			continue
		}
		if bytes.Equal(out, src) {
			continue
		}
		fmt.Fprintln(stdout, name)
		if *check {
			failed = true
			continue
		}
		if err := writeFileKeepMode(name, out); err != nil {
			return err
		}
	}
	if failed {
		return exitError(1)
	}
	return nil
}

// formatHCL returns src in canonical form. It parses first, because
// hclwrite.Format formats token by token and would happily rewrite a file
// that does not parse.
func formatHCL(src []byte, name string) ([]byte, hcl.Diagnostics) {
	if _, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
		return nil, diags
	}
	return hclwrite.Format(src), nil
}

// hclFiles expands the arguments: files as given, directories walked for
// *.hcl files, sorted and without duplicates.
func hclFiles(paths []string) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			if !seen[p] {
				seen[p] = true
				files = append(files, p)
			}
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			hidden := strings.HasPrefix(d.Name(), ".") && path != p
			if d.IsDir() {
				// Test fixtures, often broken on purpose (as go vet and
				// gofmt ./... skip them).
				if d.Name() == "testdata" && path != p {
					return filepath.SkipDir
				}
				if hidden {
					return filepath.SkipDir
				}
				return nil
			}
			if !hidden && strings.HasSuffix(d.Name(), ".hcl") && d.Type().IsRegular() {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		for _, f := range found {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	return files, nil
}

// writeFileKeepMode replaces name's content through a temporary file in the
// same directory and a rename, so that a crash never leaves half a config
// (which a running `mcpd serve` would reload).
func writeFileKeepMode(name string, data []byte) error {
	info, err := os.Stat(name)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".fmt-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
