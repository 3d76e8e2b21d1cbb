package main

import (
	"fmt"
	"io"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/authoring/lint"
	"github.com/mcpd/mcpd/engine/config"
)

// lintCmd prints a reviewer's warnings about a config. It only loads the
// config (syntax and structure), never compiles it, so it needs none of the
// config's secrets or databases.
func lintCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("lint", stderr)
	format := fs.String("format", "text", "output format: text or json")
	strict := fs.Bool("strict", false, "exit 1 when there are warnings")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("unknown --format %q (text or json)", *format)
	}
	reg := registry()
	cfg, diags := config.Load(c.paths(), config.Blocks{Adapters: reg.ToolBlocks(), Backends: reg.BackendBlocks()})
	if cfg != nil && !diags.HasErrors() {
		diags = config.SortDiagnostics(append(diags, lint.Lint(cfg, reg)...))
	}
	var sources map[string][]byte
	if cfg != nil {
		sources = cfg.Sources
	}
	if *format == "json" {
		stdout.Write(config.MarshalDiagnostics(diags))
	} else {
		config.WriteDiagnostics(stdout, diags, sources)
		if !diags.HasErrors() {
			fmt.Fprintf(stderr, "%s\n", countWarnings(diags))
		}
	}
	switch {
	case diags.HasErrors():
		if *format == "text" {
			fmt.Fprintln(stderr, "mcpd lint: the config has errors; fix them first (mcpd validate)")
		}
		return exitError(1)
	case *strict && len(diags) > 0:
		return exitError(1)
	}
	return nil
}

func countWarnings(diags hcl.Diagnostics) string {
	switch len(diags) {
	case 0:
		return "no warnings"
	case 1:
		return "1 warning"
	}
	return fmt.Sprintf("%d warnings", len(diags))
}
