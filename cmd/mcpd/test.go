package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/mcpd/mcpd/authoring/testrun"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// testCmd runs the config's test blocks (see docs/testing.md).
func testCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("test", stderr)
	runPattern := fs.String("run", "", "run only the tests whose names match this regular expression")
	asJSON := fs.Bool("json", false, "print one JSON object per test")
	verbose := fs.Bool("v", false, "print every test, with its result text, not only the failures")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mcpd test [-c PATH]... [--run REGEX] [--json] [-v]")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	var filter *regexp.Regexp
	if *runPattern != "" {
		re, err := regexp.Compile(*runPattern)
		if err != nil {
			return fmt.Errorf("--run: %v", err)
		}
		filter = re
	}
	c.logger(stderr)
	paths := c.paths()
	l := loader.Load(paths, registry(), nil, mcpdVersion())
	if l.Snapshot != nil {
		defer l.Snapshot.Close()
	}
	cases, tests, diags := testrun.Load(paths, l)
	config.WriteDiagnostics(stderr, config.SortDiagnostics(append(l.Diagnostics, diags...)), l.Sources)
	if l.Snapshot == nil || diags.HasErrors() {
		return exitError(1)
	}
	if len(tests.Tests) == 0 {
		// As go test does for a package without tests: not a failure.
		fmt.Fprintf(stdout, "?   \t%s\t[no tests: no test blocks in the config or its *_test.hcl files]\n", strings.Join(paths, ","))
		return nil
	}
	ctx, cancel := signalContext()
	defer cancel()
	p := &testrun.Printer{W: stdout, Verbose: *verbose, JSON: *asJSON}
	testrun.NewSuite(l.Config, registry(), l.Snapshot, mcpdVersion()).Run(ctx, cases, filter, p.Report)
	p.Finish(strings.Join(paths, ","))
	if p.Summary.Failed > 0 {
		return exitError(1)
	}
	if p.Summary.Passed == 0 {
		fmt.Fprintf(stderr, "mcpd test: no test matches --run %q\n", *runPattern)
	}
	return nil
}

// checkTests adds the diagnostics of the config's tests to a validation: a
// broken test file makes the config invalid, although serve never reads it.
func checkTests(paths []string, l *loader.Loaded) {
	_, _, diags := testrun.Load(paths, l)
	l.Diagnostics = append(l.Diagnostics, diags...)
	if diags.HasErrors() && l.Snapshot != nil {
		l.Snapshot.Close()
		l.Snapshot = nil
	}
}
