package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// commandHelp is what `mcpd help COMMAND` and `mcpd COMMAND -h` print above
// the command's flags.
var commandHelp = map[string]string{
	"server-json": serverJSONHelp,
	"serve": `usage: mcpd serve [-c PATH]... [--stdio [--toolset NAME] | --http ADDR] [flags]

Serves the config over MCP: Streamable HTTP on 127.0.0.1:8080/mcp by
default (and each toolset on /mcp/NAME), or one client on stdin/stdout
with --stdio (one toolset with --toolset). It runs until interrupted and
reloads when the config files change.
`,
	"grants": `usage: mcpd grants [-c PATH]... list [UPSTREAM] [--json]
       mcpd grants [-c PATH]... revoke UPSTREAM PRINCIPAL

Lists or revokes the grants users gave mcpd to call upstreams whose
identity mode is "user_authorization" (docs/gateway.md, "Per-user
authorization"): those in the Redis of the config's state block, which
every replica shares. A revoked grant's tokens are also revoked at the
authorization server when it offers revocation. No token is printed.
`,
	"validate": `usage: mcpd validate [-c PATH]... [--format text|json]

Loads and compiles the config and prints every error and warning with
file:line:col. Exits 1 when there are errors.
`,
	"list": `usage: mcpd list [-c PATH]... [--json] [--toolset NAME]

Lists the tools, resources, resource templates and prompts the config
declares, as clients see them, and its toolsets; with --toolset, only
what that toolset serves.
`,
	"call": `usage: mcpd call [-c PATH]... TOOL [--args JSON | name=value ...] [--json] [--yes]

Runs one tool in-process, through the same path as a client's tools/call,
and prints its content. Exits 1 when the result is a tool error. There is
no user to ask: a tool that asks for confirmation runs only with --yes,
and one that asks for anything else does not run.
`,
	"read": `usage: mcpd read [-c PATH]... URI [--json]

Reads a resource, or an instance of a resource template, in-process and
prints its contents (text as it is, binary as a summary unless --json).
`,
	"prompt": `usage: mcpd prompt [-c PATH]... NAME [name=value ...] [--json]

Renders a prompt with the given arguments in-process and prints its
messages.
`,
	"lint": `usage: mcpd lint [-c PATH]... [--format text|json] [--strict]

Prints the warnings a reviewer would give about a valid config: missing or
one-word descriptions, SQL tools whose annotations do not say what they do,
prompts that interpolate an optional argument without coalesce(), inline
secrets, shell tools that inherit the whole environment. Exits 1 on config
errors, and on warnings only with --strict.
`,
	"lock": lockUsage,
	"fmt":  fmtUsage,
	"lsp":  lspUsage,
	"init": initUsage,
	"client-config": `usage: mcpd client-config --host HOST [-c PATH] [--http URL] [--name NAME]

Prints the snippet an MCP host needs to start (or reach) this server, in the
host's own format, with absolute paths to this binary and the config, and
the variables the config reads with env() as the host's placeholders (never
their values). NAME defaults to the config directory's name.
HOST is one of: claude-desktop, claude-code, cursor, vscode, codex.
`,
	"version": `usage: mcpd version

Prints mcpd's version, then in parentheses the commit it was built from
(when built with go build in a git checkout; ", modified" when the checkout
had uncommitted changes) and the Go version: mcpd v1.2.3 (commit
8873f97f54d9, go1.26.8).
`,
}

// setUsage makes fs print the command's help and then its flags.
func setUsage(fs *flag.FlagSet, name string) {
	fs.Usage = func() {
		w := fs.Output()
		if h, ok := commandHelp[name]; ok {
			fmt.Fprint(w, h)
		} else {
			fmt.Fprintf(w, "usage: mcpd %s\n", name)
		}
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
}

// newBareFlagSet is a command's flag set without the config and log flags
// of newFlagSet, for commands that read no config.
func newBareFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpd "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	setUsage(fs, name)
	return fs
}

// helpCmd prints one command's help and flags on stdout, or the general
// usage without an argument. Every command answers -h with its usage on its
// flag output, here stdout, so a command added to run's switch has help
// without being listed here.
func helpCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	name := args[0]
	if name == "version" {
		fmt.Fprint(stdout, commandHelp[name])
		return 0
	}
	var out strings.Builder
	code := run([]string{name, "-h"}, &out, &out)
	if code == 2 {
		// An unknown command: run printed the general usage.
		fmt.Fprintf(stderr, "mcpd help: unknown command %q; the commands are: %s\n", name, strings.Join(commandNames(), ", "))
		return 2
	}
	io.WriteString(stdout, out.String())
	return code
}

func commandNames() []string {
	return []string{"serve", "validate", "lint", "lock", "fmt", "lsp", "list", "call", "read", "prompt", "init", "import", "client-config", "server-json", "grants", "version"}
}
