// Command mcpd serves the tools, resources and prompts declared in HCL files
// over MCP. This file holds the command line only: flags, environment and
// wiring; the work is in engine/ and adapters/.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/proc"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/suggest"
)

// version and revision are set at build time with -ldflags
// "-X main.version=v1.2.3 -X main.revision=COMMIT" (deploy/build-image.sh);
// without them engine/buildinfo reads what go build stamped.
var version, revision = "", ""

// mcpdVersion is the version configs and /metrics see (engine/buildinfo).
func mcpdVersion() string { return buildinfo.Read(version, revision).Version }

const usage = `mcpd serves tools declared in HCL over the Model Context Protocol.

Usage:
  mcpd serve    [-c PATH]... [--stdio | --http ADDR]   serve MCP (default: HTTP on 127.0.0.1:8080)
  mcpd validate [-c PATH]... [--format text|json] [--strict]  check a config; exit 1 on errors
  mcpd list     [-c PATH]... [--json]                  list tools, resources and prompts
  mcpd call     [-c PATH]... TOOL [--args JSON | k=v ...]  run one tool in-process
  mcpd read     [-c PATH]... URI [--json]              read a resource in-process
  mcpd prompt   [-c PATH]... NAME [k=v ...] [--json]   render a prompt in-process
  mcpd test     [-c PATH]... [--run REGEX] [--json] [-v]  run the config's test blocks
  mcpd lint     [-c PATH]... [--format text|json]      a reviewer's warnings about a config
  mcpd lock     [-c PATH]... [--check | --approve NAME]  pin what is served (mcpd.lock); --check for CI
  mcpd fmt      [--check] [PATH... | -]                rewrite config files in canonical form
  mcpd lsp                                             a language server on stdio, for editors
  mcpd init     [DIR]                                  scaffold a new project
  mcpd import   openapi SPEC | toolbox TOOLS.yaml [-o DIR]  convert an OpenAPI document or a Toolbox config
  mcpd client-config --host HOST [--http URL]          print a host's config snippet
  mcpd server-json [-c PATH]... --url URL               print the MCP Registry's server.json
  mcpd help     [COMMAND]                              print a command's help and flags
  mcpd version                                          print the version

-c/--config takes a file or a directory of *.hcl files and may be repeated;
the default is ./tools.hcl. Every flag can also be set as MCPD_<FLAG>, e.g.
MCPD_HTTP=0.0.0.0:8080 or MCPD_CONFIG=/etc/mcpd (several paths separated by ':').
Run 'mcpd help COMMAND' (or 'mcpd COMMAND -h') for a command's flags.
`

func main() {
	setGCPolicy()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, os.Stdin, stdout, stderr)
}

// runIO is run with stdin given, for commands that read it (fmt -).
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		err = serveCmd(rest, stderr)
	case "grants":
		err = grantsCmd(rest, stdout, stderr)
	case "validate":
		err = validateCmd(rest, stdout, stderr)
	case "list":
		err = listCmd(rest, stdout, stderr)
	case "call":
		err = callCmd(rest, stdout, stderr)
	case "read":
		err = readCmd(rest, stdout, stderr)
	case "prompt":
		err = promptCmd(rest, stdout, stderr)
	case "lint":
		err = lintCmd(rest, stdout, stderr)
	case "lock":
		err = lockCmd(rest, stdout, stderr)
	case "fmt":
		err = fmtCmd(rest, stdin, stdout, stderr)
	case "lsp":
		err = lspCmd(rest, stdin, stdout, stderr)
	case "init":
		err = initCmd(rest, stdout, stderr)
	case "import":
		err = importCmd(rest, stdin, stdout, stderr)
	case "client-config":
		err = clientConfigCmd(rest, stdout, stderr)
	case "server-json":
		err = serverJSONCmd(rest, stdout, stderr)
	case "test":
		err = testCmd(rest, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "mcpd %s\n", buildinfo.Read(version, revision))
		return 0
	case "help", "-h", "--help":
		return helpCmd(rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "mcpd: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &exit):
		return int(exit)
	default:
		fmt.Fprintf(stderr, "mcpd %s: %v\n", cmd, err)
		return 1
	}
}

// exitError ends a command with a status code after it has said why.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// registry builds the adapter registry: every adapter mcpd ships, under the
// block name that selects it.
func registry() *adapter.Registry { return registryWith(nil) }

// registryWith is registry whose programs (shell tools, stdio upstreams)
// are started through procs (nil: a supervisor of the registry's own), for
// a command that must kill them all when it exits.
func registryWith(procs *proc.Supervisor) *adapter.Registry {
	reg := adapter.NewRegistry()
	builtin.RegisterWithSupervisor(reg, procs)
	return reg
}

// registryServing is registryWith for a server, whose MCP upstreams that
// authorize each user run their flow through conn (connect.go).
func registryServing(procs *proc.Supervisor, conn *connect.Service) *adapter.Registry {
	reg := adapter.NewRegistry()
	builtin.RegisterServing(reg, procs, conn)
	return reg
}

// pathList is the repeatable -c flag.
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, string(os.PathListSeparator)) }
func (p *pathList) Set(v string) error {
	for _, s := range strings.Split(v, string(os.PathListSeparator)) {
		if s != "" {
			*p = append(*p, s)
		}
	}
	return nil
}

// common are the flags every config-reading command takes.
type common struct {
	configs   pathList
	logLevel  string
	logFormat string
}

func newFlagSet(name string, stderr io.Writer) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet("mcpd "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, name)
	c := &common{}
	fs.Var(&c.configs, "config", "config file or directory of *.hcl (repeatable; default ./tools.hcl)")
	fs.Var(&c.configs, "c", "shorthand for --config")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format on stderr: text or json")
	return fs, c
}

// parse parses flags, then fills every flag not given on the command line
// from its MCPD_* environment variable.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["c"] {
		set["config"] = true
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "c" || err != nil {
			return
		}
		env := "MCPD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %w", env, e)
			}
		}
	})
	return err
}

func (c *common) paths() []string {
	if len(c.configs) == 0 {
		return []string{"tools.hcl"}
	}
	return c.configs
}

func (c *common) logger(stderr io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(stderr, opts)
	if c.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, opts)
	}
	l := slog.New(h)
	slog.SetDefault(l)
	return l
}

// load loads and compiles the config, printing diagnostics to stderr. It
// fails when there are errors.
func load(c *common, reg *adapter.Registry, stderr io.Writer) (*loader.Loaded, error) {
	l := loader.Load(c.paths(), reg, nil, mcpdVersion())
	config.WriteDiagnostics(stderr, l.Diagnostics, l.Sources)
	if l.Snapshot == nil {
		return nil, exitError(1)
	}
	return l, nil
}

func validateCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("validate", stderr)
	format := fs.String("format", "text", "output format: text or json")
	strict := fs.Bool("strict", false, "an environment variable that env() reads and that is not set is an error, not a warning")
	if err := parse(fs, args); err != nil {
		return err
	}
	// Without --strict, a config checks without its secrets (in CI): an
	// unset variable is a warning and the checks that need it are skipped.
	l := loader.LoadWith(c.paths(), registry(), nil, mcpdVersion(), loader.Options{UnsetEnvWarning: !*strict, CheckOnly: true})
	checkTests(c.paths(), l)
	if l.Snapshot != nil {
		defer l.Snapshot.Close()
	}
	switch *format {
	case "json":
		stdout.Write(config.MarshalDiagnostics(l.Diagnostics))
	case "text":
		config.WriteDiagnostics(stderr, l.Diagnostics, l.Sources)
		switch s := l.Snapshot; {
		case s != nil:
			fmt.Fprintf(stdout, "%s: valid (%s, %s, %s, %s)\n", strings.Join(l.Files, ", "),
				count(len(s.Tools), "tool"), count(len(s.Resources), "resource"),
				count(len(s.Templates), "resource template"), count(len(s.Prompts), "prompt")+toolsetCount(s))
		case !l.Diagnostics.HasErrors():
			// Valid, but a check that needed an unset variable was skipped.
			fmt.Fprintf(stdout, "%s: valid (except what the unset variables above decide)\n", strings.Join(l.Files, ", "))
		}
	default:
		return fmt.Errorf("unknown --format %q (text or json)", *format)
	}
	if l.Diagnostics.HasErrors() || (l.Snapshot == nil && len(l.Files) == 0) {
		return exitError(1)
	}
	return nil
}

func listCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("list", stderr)
	asJSON := fs.Bool("json", false, "print JSON: the tools, resources, templates and prompts as clients see them")
	toolset := fs.String("toolset", "", "list only what this toolset serves (/mcp/NAME, serve --stdio --toolset NAME)")
	if err := parse(fs, args); err != nil {
		return err
	}
	// A catalog is listed without the secrets its calls need, and without
	// dialing the state block's Redis: nothing is called.
	l, err := loadWithoutSecrets("list", c, registry(), stderr, true)
	if err != nil {
		return err
	}
	snap := l.Snapshot
	defer snap.Close()
	s, err := toolsetView(snap, *toolset)
	if err != nil {
		return err
	}
	if *asJSON {
		out := map[string]any{"tools": []any{}, "resources": []any{}, "resourceTemplates": []any{}, "prompts": []any{}}
		var tools, res, tmpl, prompts []any
		for _, t := range s.Tools {
			tools = append(tools, t.Def)
		}
		for _, r := range s.Resources {
			res = append(res, r.Def)
		}
		for _, t := range s.Templates {
			tmpl = append(tmpl, t.Def)
		}
		for _, p := range s.Prompts {
			prompts = append(prompts, p.Def)
		}
		for k, v := range map[string][]any{"tools": tools, "resources": res, "resourceTemplates": tmpl, "prompts": prompts} {
			if v != nil {
				out[k] = v
			}
		}
		if len(snap.Toolsets) > 0 && *toolset == "" {
			out["toolsets"] = toolsetSummaries(snap)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, t := range s.Tools {
		fmt.Fprintf(stdout, "tool %s(%s)\n", t.Def.Name, paramSummary(t.InputSchema))
		if t.Def.Description != "" {
			fmt.Fprintf(stdout, "    %s\n", firstLine(t.Def.Description))
		}
	}
	for _, r := range s.Resources {
		fmt.Fprintf(stdout, "resource %s  %s\n", r.Def.URI, r.Def.MIMEType)
	}
	for _, t := range s.Templates {
		fmt.Fprintf(stdout, "resource_template %s  %s\n", t.Def.URITemplate, t.Def.MIMEType)
	}
	for _, p := range s.Prompts {
		var names []string
		for _, a := range p.Def.Arguments {
			names = append(names, a.Name)
		}
		fmt.Fprintf(stdout, "prompt %s(%s)\n", p.Def.Name, strings.Join(names, ", "))
	}
	if *toolset == "" {
		for _, ts := range snap.Toolsets {
			v := ts.All()
			fmt.Fprintf(stdout, "toolset %s  /mcp/%s  (%s, %s, %s)", ts.Name, ts.Name, count(len(v.Tools), "tool"),
				count(len(v.Resources)+len(v.Templates), "resource"), count(len(v.Prompts), "prompt"))
			if len(ts.Scopes) > 0 {
				fmt.Fprintf(stdout, "  scopes: %s", strings.Join(ts.Scopes, " "))
			}
			if ts.Name == snap.Server.DefaultToolset {
				fmt.Fprint(stdout, "  (default: also /mcp)")
			}
			fmt.Fprintln(stdout)
		}
	}
	return nil
}

// toolsetView is what the endpoint of toolset shows the local user: the
// whole config for "", else the toolset's members. (/mcp itself serves
// server.default_toolset when the config names one; `mcpd list` without
// --toolset lists everything, and names the toolsets.)
func toolsetView(s *snapshot.Snapshot, toolset string) (*snapshot.View, error) {
	if toolset == "" {
		return s.View(nil), nil
	}
	ts, ok := s.Toolset(toolset)
	if !ok {
		return nil, unknownToolset(s, toolset)
	}
	return ts.All(), nil
}

// unknownToolset is the error of a --toolset that names no toolset.
func unknownToolset(s *snapshot.Snapshot, name string) error {
	declared := s.ToolsetNames()
	if len(declared) == 0 {
		return fmt.Errorf("--toolset %q: the config declares no toolset", name)
	}
	return fmt.Errorf("--toolset %q: no toolset of that name.%s Declared: %s", name, suggest.DidYouMean(name, declared), strings.Join(declared, ", "))
}

// toolsetSummaries are the toolsets as `mcpd list --json` shows them.
func toolsetSummaries(s *snapshot.Snapshot) []any {
	var out []any
	for _, ts := range s.Toolsets {
		v := ts.All()
		names := func(n int, name func(int) string) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = name(i)
			}
			return out
		}
		m := map[string]any{
			"name":              ts.Name,
			"path":              "/mcp/" + ts.Name,
			"scopes":            append([]string{}, ts.Scopes...),
			"tools":             names(len(v.Tools), func(i int) string { return v.Tools[i].Def.Name }),
			"resources":         names(len(v.Resources), func(i int) string { return v.Resources[i].Def.URI }),
			"resourceTemplates": names(len(v.Templates), func(i int) string { return v.Templates[i].Def.URITemplate }),
			"prompts":           names(len(v.Prompts), func(i int) string { return v.Prompts[i].Def.Name }),
			"default":           ts.Name == s.Server.DefaultToolset,
		}
		if ts.Description != "" {
			m["description"] = ts.Description
		}
		out = append(out, m)
	}
	return out
}

// paramSummary renders an input schema's properties as "name: type, ...",
// with optional ones marked by '?'.
func paramSummary(schema any) string {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := m["required"].([]any); ok {
		for _, n := range r {
			if s, ok := n.(string); ok {
				req[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		typ := "any"
		if p, ok := props[n].(map[string]any); ok {
			if t, ok := p["type"].(string); ok {
				typ = t
			}
		}
		opt := ""
		if !req[n] {
			opt = "?"
		}
		parts = append(parts, fmt.Sprintf("%s%s: %s", n, opt, typ))
	}
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// toolsetCount is ", N toolsets" for a config that declares any, else "".
func toolsetCount(s *snapshot.Snapshot) string {
	if len(s.Toolsets) == 0 {
		return ""
	}
	return ", " + count(len(s.Toolsets), "toolset")
}

// count is "1 tool", "2 tools", "0 tools".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
