package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/mcpd/mcpd/engine/config"
)

// hostNames are the hosts client-config knows, in the order the help lists them.
var hostNames = []string{"claude-desktop", "claude-code", "cursor", "vscode", "codex"}

// clientConfigCmd prints the snippet a host needs to start mcpd over stdio
// with this binary and config, or to reach a running server over HTTP.
func clientConfigCmd(args []string, stdout, stderr io.Writer) error {
	fs := newBareFlagSet("client-config", stderr)
	var configs pathList
	fs.Var(&configs, "config", "config file or directory (repeatable; default ./tools.hcl)")
	fs.Var(&configs, "c", "shorthand for --config")
	host := fs.String("host", "", "the host: "+strings.Join(hostNames, ", "))
	httpURL := fs.String("http", "", "`URL` of a running mcpd serve --http (e.g. http://127.0.0.1:8080/mcp), instead of starting mcpd over stdio")
	name := fs.String("name", "", "the server's name in the host's config (default: the config directory's name; mcpd with --http)")
	toolset := fs.String("toolset", "", "serve the host only this toolset: --toolset NAME on stdio, /mcp/NAME over HTTP")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *host == "" {
		return fmt.Errorf("--host is required: one of %s", strings.Join(hostNames, ", "))
	}
	nameSet := false
	fs.Visit(func(f *flag.Flag) { nameSet = nameSet || f.Name == "name" })
	if nameSet && (*name == "" || strings.ContainsAny(*name, " \t\n\"'")) {
		return fmt.Errorf("--name %q: use a name without spaces or quotes", *name)
	}
	var sc serverCommand
	if *httpURL != "" {
		u, err := url.Parse(*httpURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--http %q is not an http(s) URL", *httpURL)
		}
		if len(configs) > 0 {
			return fmt.Errorf("give either --http (a running server) or -c (a config to serve over stdio), not both")
		}
		sc.url = *httpURL
		if *toolset != "" {
			if !strings.HasSuffix(u.Path, "/mcp") {
				return fmt.Errorf("--toolset with --http: the URL must end in /mcp (the toolset is served on /mcp/%s); or give the toolset's URL itself without --toolset", *toolset)
			}
			u.Path += "/" + url.PathEscape(*toolset)
			sc.url = u.String()
		}
	} else {
		exe, err := executable(stderr)
		if err != nil {
			return err
		}
		sc.command = exe
		sc.args = []string{"serve", "--stdio"}
		if len(configs) == 0 {
			configs = pathList{"tools.hcl"}
		}
		for _, c := range configs {
			abs, err := filepath.Abs(c)
			if err != nil {
				return fmt.Errorf("config %s: %w", c, err)
			}
			if _, err := os.Stat(abs); err != nil {
				fmt.Fprintf(stderr, "mcpd client-config: warning: %s does not exist (yet); the host will fail to start mcpd until it does\n", abs)
			}
			sc.args = append(sc.args, "-c", abs)
		}
		if *toolset != "" {
			sc.args = append(sc.args, "--toolset", *toolset)
		}
		sc.env = configEnv(configs, stderr)
	}
	if !nameSet {
		*name = defaultServerName(configs, *toolset)
	}
	switch *host {
	case "claude-desktop":
		if len(sc.env) > 0 && sc.url == "" {
			fmt.Fprintf(stderr, "mcpd client-config: Claude Desktop does not expand variables in its config: replace each \"${NAME}\" under \"env\" with the value (%s) before you save the file, and keep the file private.\n", strings.Join(sc.env, ", "))
		}
		return writeJSON(stdout, map[string]any{"mcpServers": map[string]any{*name: sc.claudeDesktop(stderr)}})
	case "cursor":
		return writeJSON(stdout, map[string]any{"mcpServers": map[string]any{*name: sc.cursor()}})
	case "vscode":
		out := map[string]any{"servers": map[string]any{*name: sc.vscode()}}
		if in := sc.vscodeInputs(*name); len(in) > 0 {
			out["inputs"] = in
		}
		return writeJSON(stdout, out)
	case "claude-code":
		if len(sc.env) > 0 && sc.url == "" {
			fmt.Fprintf(stderr, "mcpd client-config: the shell expands %s when you run this command: set them first (Claude Code keeps the values in its own config).\n", strings.Join(sc.env, ", "))
		}
		_, err := fmt.Fprintln(stdout, sc.claudeCode(*name))
		return err
	case "codex":
		_, err := io.WriteString(stdout, sc.codex(*name))
		return err
	default:
		return fmt.Errorf("unknown --host %q: one of %s", *host, strings.Join(hostNames, ", "))
	}
}

// serverCommand is how a host reaches mcpd: a command to start (stdio), or
// the URL of a running server.
type serverCommand struct {
	command string
	args    []string
	url     string
	// env are the variables the config reads without a default: the host
	// must pass them, or mcpd stops at start. Names only: each host format
	// gets a placeholder it fills in itself (or the user does).
	env []string
}

// configEnv lists the variables the config at paths reads with env() and
// no default, in order, each once. A config that cannot be read yet lists
// none (client-config has warned that it does not exist).
func configEnv(paths []string, stderr io.Writer) []string {
	reg := registry()
	cfg, diags := config.LoadWith(paths, config.Blocks{Adapters: reg.ToolBlocks(), Backends: reg.BackendBlocks()},
		config.Options{UnsetEnvUnknown: true})
	if cfg == nil {
		return nil
	}
	if diags.HasErrors() {
		fmt.Fprintln(stderr, "mcpd client-config: warning: the config has errors (mcpd validate shows them); the host's mcpd will not start until they are fixed")
	}
	var names []string
	seen := map[string]bool{}
	for _, c := range cfg.Env {
		if c.HasDefault || seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		if !envName.MatchString(c.Name) {
			fmt.Fprintf(stderr, "mcpd client-config: warning: %s reads env(%q), which is not a portable variable name; pass it to the host's mcpd yourself\n", c.Range, c.Name)
			continue
		}
		names = append(names, c.Name)
	}
	return names
}

// envName is a variable name every host format and shell can carry.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// defaultServerName is the server's name in the host's config: the config
// directory's name (two projects each get their own entry in one host),
// and the toolset's after it. A URL has no project: mcpd.
func defaultServerName(configs []string, toolset string) string {
	name := "mcpd"
	if len(configs) > 0 {
		dir := configs[0]
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			dir = filepath.Dir(dir)
		}
		if n := sanitizeName(filepath.Base(dir)); n != "" {
			name = n
		}
	}
	if toolset != "" {
		if t := sanitizeName(toolset); t != "" {
			name += "-" + t
		}
	}
	return name
}

// sanitizeName keeps letters, digits, - and _ (lower case), the names every
// host accepts, and makes any other run of characters one -.
func sanitizeName(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-_")
}

// claudeDesktop is an entry of claude_desktop_config.json, whose servers
// are commands: a remote one is reached through the mcp-remote bridge.
func (s serverCommand) claudeDesktop(stderr io.Writer) map[string]any {
	if s.url != "" {
		fmt.Fprintln(stderr, "mcpd client-config: Claude Desktop's config file starts local commands only; this snippet bridges to the URL with `npx mcp-remote` (needs Node.js). Settings > Connectors adds a remote server without it.")
		return map[string]any{"command": "npx", "args": []string{"-y", "mcp-remote", s.url}}
	}
	return s.withEnv(map[string]any{"command": s.command, "args": s.args}, "${%s}")
}

// withEnv adds to a JSON entry the "env" object that passes each variable
// as the placeholder format makes of its name.
func (s serverCommand) withEnv(entry map[string]any, format string) map[string]any {
	if len(s.env) == 0 {
		return entry
	}
	env := map[string]any{}
	for _, n := range s.env {
		env[n] = fmt.Sprintf(format, n)
	}
	entry["env"] = env
	return entry
}

// cursor is an entry of .cursor/mcp.json (or ~/.cursor/mcp.json).
func (s serverCommand) cursor() map[string]any {
	if s.url != "" {
		return map[string]any{"url": s.url}
	}
	// Cursor interpolates ${env:NAME} from its own environment.
	return s.withEnv(map[string]any{"command": s.command, "args": s.args}, "${env:%s}")
}

// vscode is an entry of .vscode/mcp.json's "servers".
func (s serverCommand) vscode() map[string]any {
	if s.url != "" {
		return map[string]any{"type": "http", "url": s.url}
	}
	// VS Code asks for each ${input:ID} once and keeps it in its secret
	// storage (see vscodeInputs).
	return s.withEnv(map[string]any{"type": "stdio", "command": s.command, "args": s.args}, "${input:%s}")
}

// vscodeInputs are the top-level "inputs" of .vscode/mcp.json that the
// env placeholders of vscode name: a password prompt each.
func (s serverCommand) vscodeInputs(name string) []any {
	if s.url != "" {
		return nil
	}
	var in []any
	for _, n := range s.env {
		in = append(in, map[string]any{"type": "promptString", "id": n, "description": fmt.Sprintf("%s for the MCP server %s", n, name), "password": true})
	}
	return in
}

// claudeCode is the `claude mcp add` command line, quoted for a POSIX shell.
func (s serverCommand) claudeCode(name string) string {
	if s.url != "" {
		return fmt.Sprintf("claude mcp add --transport http %s %s", shellQuote(name), shellQuote(s.url))
	}
	// The name comes before --env: its values are variadic, and would
	// take the name as one more.
	parts := []string{"claude", "mcp", "add", "--transport", "stdio", shellQuote(name)}
	for _, n := range s.env {
		parts = append(parts, "--env", `"`+n+`=$`+n+`"`)
	}
	parts = append(parts, "--", shellQuote(s.command))
	for _, a := range s.args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// codex is the [mcp_servers.NAME] table of ~/.codex/config.toml. JSON string
// syntax is valid TOML basic-string syntax.
func (s serverCommand) codex(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\n", tomlKey(name))
	if s.url != "" {
		fmt.Fprintf(&b, "url = %s\n", jsonString(s.url))
		return b.String()
	}
	fmt.Fprintf(&b, "command = %s\n", jsonString(s.command))
	quoted := make([]string, len(s.args))
	for i, a := range s.args {
		quoted[i] = jsonString(a)
	}
	fmt.Fprintf(&b, "args = [%s]\n", strings.Join(quoted, ", "))
	if len(s.env) > 0 {
		// env_vars forwards each variable from Codex's own environment.
		quoted = quoted[:0]
		for _, n := range s.env {
			quoted = append(quoted, jsonString(n))
		}
		fmt.Fprintf(&b, "env_vars = [%s]\n", strings.Join(quoted, ", "))
	}
	return b.String()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tomlKey leaves a bare key as it is and quotes anything else.
func tomlKey(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return jsonString(s)
		}
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// executable is the absolute path of this binary. A binary built by `go run`
// lives in a temporary directory that is deleted when it exits: a host
// configured with it would fail to start, so say so.
func executable(stderr io.Writer) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this binary's path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if isTempBuild(exe) {
		if installed, ok := installedBinary(); ok {
			fmt.Fprintf(stderr, "mcpd client-config: this mcpd was built by `go run` in a temporary directory; the snippet uses the installed %s instead (reinstall it with go install ./cmd/mcpd after changes).\n", installed)
			return installed, nil
		}
		fmt.Fprintf(stderr, "mcpd client-config: warning: this mcpd (%s) was built by `go run` in a temporary directory that disappears when it exits. Install it first (go install ./cmd/mcpd) and run client-config again.\n", exe)
	}
	return exe, nil
}

// installedBinary is where `go install ./cmd/mcpd` puts mcpd ($GOBIN, or
// the first $GOPATH's bin, or ~/go/bin), when it is there.
func installedBinary() (string, bool) {
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(filepath.SplitList(gp)[0], "bin"))
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "mcpd")
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, true
			}
		}
	}
	return "", false
}

// isTempBuild reports whether exe is where `go run` puts the binaries it
// builds: $GOTMPDIR (default $TMPDIR)/go-build.../b001/exe/NAME.
func isTempBuild(exe string) bool {
	for _, part := range strings.Split(filepath.ToSlash(filepath.Dir(exe)), "/") {
		if strings.HasPrefix(part, "go-build") {
			return true
		}
	}
	return false
}
