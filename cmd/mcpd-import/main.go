// Command mcpd-import converts an OpenAPI document or a Google MCP Toolbox
// config into mcpd HCL. Users run it as `mcpd import ...`: mcpd runs this
// program, found beside its own executable or on PATH.
//
// It is a program of its own because the OpenAPI parser it links
// (kin-openapi, and the JSON Schema compiler under it) builds megabytes of
// tables when the process starts. In mcpd itself that heap would live for
// the whole of `mcpd serve` and be marked by every garbage collection: it
// cost about 10 % of the calls per CPU-second on the static tool and
// 4.5 MiB of idle RSS (docs/performance.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/authoring/importer"
	"github.com/mcpd/mcpd/authoring/importer/openapi"
	"github.com/mcpd/mcpd/authoring/importer/toolbox"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3", as
// mcpd's is; configs may check it. revision likewise (-X main.revision=).
var version, revision = "", ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run takes the arguments that follow `mcpd import`.
func run(args []string, stdout, stderr io.Writer) int {
	err := importCmd(args, stdout, stderr)
	var exit exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &exit):
		return int(exit)
	default:
		fmt.Fprintf(stderr, "mcpd import: %v\n", err)
		return 1
	}
}

// exitError ends the command with a status code after it has said why.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

func mcpdVersion() string { return buildinfo.Read(version, revision).Version }

func registry() *adapter.Registry {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	return reg
}

const importUsage = `usage: mcpd import openapi SPEC [--tags T,...] [--operations ID,...] [--name NAME] [--base-url URL] [--ref-root DIR] [-o DIR]
       mcpd import toolbox TOOLS.yaml [-o DIR]

Converts another tool's configuration into mcpd HCL:

  openapi  an OpenAPI 3.0 or 3.1 document (JSON or YAML, a file or an
           http(s) URL): one tool per operation with the http adapter, an
           http_backend with the credentials read from the environment.
           Its $refs may read the files of its own directory tree
           (--ref-root widens it) or, for a URL, that URL's host.
  toolbox  a Google MCP Toolbox tools.yaml (either format): databases,
           http backends and tools with the sql and http adapters.

The configuration is written to DIR/tools.hcl (-o; DIR is created, an
existing tools.hcl is not overwritten) or to stdout, formatted, and checked
first as 'mcpd validate' would (a block it refuses is left out). What could
not be converted is listed on stderr with its place in the source. Exits 1
when nothing could be converted or DIR/tools.hcl exists.
`

func importCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpd import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), importUsage)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	out := fs.String("out", "", "write DIR/tools.hcl instead of printing the configuration on stdout")
	fs.StringVar(out, "o", "", "shorthand for --out")
	tags := fs.String("tags", "", "openapi: convert only the operations with one of these tags (comma-separated)")
	ops := fs.String("operations", "", "openapi: convert only these operations, by operationId (comma-separated)")
	name := fs.String("name", "", "openapi: name of the http_backend and prefix of its environment variables (default: from info.title)")
	baseURL := fs.String("base-url", "", "openapi: the API's base URL (default: the document's first server)")
	refRoot := fs.String("ref-root", "", "openapi: the directory whose files the $refs of a document read from a file may read (default: the document's own directory)")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := fs.Parse(args); err != nil {
			return err
		}
		fs.Usage()
		return exitError(2)
	}
	kind, rest := args[0], args[1:]
	if kind != "openapi" && kind != "toolbox" {
		return fmt.Errorf("unknown format %q: mcpd import openapi SPEC, or mcpd import toolbox TOOLS.yaml", kind)
	}
	// Flags may come before or after the source.
	var positional []string
	for {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fs.Usage()
		return exitError(2)
	}
	if kind == "toolbox" && *tags+*ops+*name+*baseURL+*refRoot != "" {
		return fmt.Errorf("--tags, --operations, --name, --base-url and --ref-root are for openapi documents")
	}
	src := positional[0]
	var hclSrc []byte
	var report *importer.Report
	switch kind {
	case "openapi":
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer cancel()
		doc, err := openapi.LoadWith(ctx, src, openapi.LoadOptions{RefRoot: *refRoot})
		if err != nil {
			return err
		}
		res, err := openapi.Convert(doc, openapi.Options{
			Name: *name, BaseURL: *baseURL, Tags: splitList(*tags), Operations: splitList(*ops), Source: filepath.Base(src),
		})
		if err != nil {
			return err
		}
		hclSrc, report = res.HCL, res.Report
	case "toolbox":
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		res, err := toolbox.Convert(data, toolbox.Options{Source: filepath.Base(src)})
		if err != nil {
			return err
		}
		hclSrc, report = res.HCL, res.Report
	}
	report.File = src
	// Checked as mcpd validate checks it. A block the loader refuses (a
	// case the converter missed) is left out and reported, and the rest
	// checked again: an import writes what it can.
	var refused []string
	for round := 0; ; round++ {
		diags, sources := validateGenerated(hclSrc)
		if !diags.HasErrors() {
			break
		}
		pruned, removed := importer.Prune(hclSrc, diags)
		if len(removed) == 0 || round == 5 {
			config.WriteDiagnostics(stderr, diags, sources)
			return fmt.Errorf("the generated configuration does not validate (a bug in mcpd import: please report it with the source document)")
		}
		hclSrc, refused = pruned, append(refused, removed...)
	}
	for _, r := range refused {
		report.Skip("", 0, "%s", r)
	}
	report.Write(stderr)
	fmt.Fprintf(stderr, "%d parts not converted, %d notes\n", report.Count(importer.Skipped), report.Count(importer.Note))

	if *out == "" {
		_, err := stdout.Write(hclSrc)
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	target := filepath.Join(*out, "tools.hcl")
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, iofs.ErrExist) {
		return fmt.Errorf("not overwriting %s: choose another -o directory or move it away", target)
	} else if err != nil {
		return err
	}
	if _, err := f.Write(hclSrc); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s; serve it with: mcpd serve -c %s\n", target, *out)
	return nil
}

// validateGenerated loads the generated configuration with the real
// loader, from a temporary copy, as 'mcpd validate' does: an unset
// environment variable is only a warning, and only errors are returned.
func validateGenerated(src []byte) (hcl.Diagnostics, map[string][]byte) {
	dir, err := os.MkdirTemp("", "mcpd-import-")
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "cannot validate", Detail: err.Error()}}, nil
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tools.hcl")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "cannot validate", Detail: err.Error()}}, nil
	}
	l := loader.LoadWith([]string{path}, registry(), nil, mcpdVersion(), loader.Options{UnsetEnvWarning: true})
	if l.Snapshot != nil {
		l.Snapshot.Close()
	}
	var errs hcl.Diagnostics
	for _, d := range l.Diagnostics {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	return errs, l.Sources
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
