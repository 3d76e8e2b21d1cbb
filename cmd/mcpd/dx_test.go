package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHelpPerCommand(t *testing.T) {
	clearEnv(t)
	// Each command with one flag its help must list (none for version).
	flags := map[string]string{
		"serve": "-stdio", "validate": "-format", "lint": "-strict", "lock": "-check", "fmt": "-check", "list": "-json",
		"call": "-args", "read": "-json", "prompt": "-json", "init": "", "import": "-base-url", "client-config": "-host", "server-json": "-url", "grants": "-json", "version": "", "lsp": "",
	}
	for _, name := range commandNames() {
		t.Run(name, func(t *testing.T) {
			flag, ok := flags[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			r := runCLI(t, "help", name)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: mcpd "+name) || r.stderr != "" {
				t.Fatalf("help %s: %+v", name, r)
			}
			if flag != "" && (!strings.Contains(r.stdout, "\nFlags:\n") || !strings.Contains(r.stdout, "  "+flag)) {
				t.Errorf("help %s does not list %s:\n%s", name, flag, r.stdout)
			}
			if strings.Contains(r.stdout, "Usage:\n  mcpd serve") {
				t.Errorf("help %s printed the general usage", name)
			}
			if name == "version" {
				return
			}
			// COMMAND --help prints the same, on stderr, and succeeds.
			r2 := runCLI(t, name, "--help")
			if r2.code != 0 || r2.stderr != r.stdout {
				t.Errorf("%s --help: %+v\nwant stderr %q", name, r2, r.stdout)
			}
		})
	}
	if r := runCLI(t, "help", "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Errorf("help frobnicate: %+v", r)
	}
}

func TestReadAndPrompt(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": cliConfig})
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"read a resource", []string{"read", "-c", dir, "docs://readme"}, 0, "Read me.\n", ""},
		{"read a template instance, flags after", []string{"read", "users://42", "-c", dir}, 0, `{"id":"42"}` + "\n", ""},
		{"read an unknown URI", []string{"read", "-c", dir, "docs://nope"}, 1, "", `no resource "docs://nope"; the config declares: docs://readme, users://{id}`},
		{"read without a URI", []string{"read", "-c", dir}, 2, "", "usage: mcpd read"},
		{"prompt", []string{"prompt", "-c", dir, "trip", "city=Paris"}, 0, "[user]\nPlan Paris\n", ""},
		{"prompt missing a required argument", []string{"prompt", "-c", dir, "trip"}, 1, "", "missing required argument(s) city"},
		{"prompt with an unknown argument", []string{"prompt", "-c", dir, "trip", "city=Paris", "dayz=3"}, 1, "", "unknown argument(s) dayz"},
		{"unknown prompt", []string{"prompt", "-c", dir, "trp"}, 1, "", `no prompt "trp"; the config declares: trip`},
		{"prompt argument not name=value", []string{"prompt", "-c", dir, "trip", "Paris"}, 1, "", `argument "Paris" is not name=value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != tc.code || (tc.code == 0 && r.stdout != tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("got %+v\nwant exit %d, stdout %q, stderr containing %q", r, tc.code, tc.stdout, tc.stderr)
			}
		})
	}

	r := runCLI(t, "read", "-c", dir, "--json", "users://7")
	var rr mcp.ReadResourceResult
	if err := json.Unmarshal([]byte(r.stdout), &rr); err != nil || r.code != 0 || len(rr.Contents) != 1 ||
		rr.Contents[0].URI != "users://7" || rr.Contents[0].MIMEType != "application/json" || rr.Contents[0].Text != `{"id":"7"}` {
		t.Errorf("read --json: %v %+v", err, r)
	}
	r = runCLI(t, "prompt", "-c", dir, "--json", "trip", "city=Oslo", "days=3")
	var pr struct {
		Messages []struct {
			Role    string
			Content struct{ Type, Text string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &pr); err != nil || r.code != 0 || len(pr.Messages) != 1 ||
		pr.Messages[0].Role != "user" || pr.Messages[0].Content.Text != "Plan Oslo" {
		t.Errorf("prompt --json: %v %+v", err, r)
	}
}

func TestClientConfig(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": cliConfig})
	cfg := filepath.Join(dir, "tools.hcl")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe, _ = filepath.EvalSymlinks(exe)
	stdioArgs := []any{"serve", "--stdio", "-c", cfg}
	const url = "http://127.0.0.1:8080/mcp"
	jsonHosts := []struct {
		host string
		http bool
		want map[string]any
	}{
		{"claude-desktop", false, map[string]any{"mcpServers": map[string]any{"tools": map[string]any{"command": exe, "args": stdioArgs}}}},
		{"claude-desktop", true, map[string]any{"mcpServers": map[string]any{"tools": map[string]any{"command": "npx", "args": []any{"-y", "mcp-remote", url}}}}},
		{"cursor", false, map[string]any{"mcpServers": map[string]any{"tools": map[string]any{"command": exe, "args": stdioArgs}}}},
		{"cursor", true, map[string]any{"mcpServers": map[string]any{"tools": map[string]any{"url": url}}}},
		{"vscode", false, map[string]any{"servers": map[string]any{"tools": map[string]any{"type": "stdio", "command": exe, "args": stdioArgs}}}},
		{"vscode", true, map[string]any{"servers": map[string]any{"tools": map[string]any{"type": "http", "url": url}}}},
	}
	for _, tc := range jsonHosts {
		args := []string{"client-config", "--host", tc.host, "--name", "tools"}
		if tc.http {
			args = append(args, "--http", url)
		} else {
			args = append(args, "-c", cfg)
		}
		r := runCLI(t, args...)
		var got map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: %v\n%+v\nwant %v", args, err, r, tc.want)
		}
	}

	// Relative config paths become absolute; the default is ./tools.hcl.
	t.Chdir(dir)
	textHosts := []struct {
		args []string
		want string
	}{
		{[]string{"--host", "claude-code"}, "claude mcp add --transport stdio " + filepath.Base(dir) + " -- " + exe + " serve --stdio -c " + cfg + "\n"},
		{[]string{"--host", "claude-code", "--http", url, "--name", "tools"}, "claude mcp add --transport http tools " + url + "\n"},
		{[]string{"--host", "codex", "-c", "tools.hcl"}, "[mcp_servers." + filepath.Base(dir) + "]\ncommand = " + jsonString(exe) + "\nargs = [\"serve\", \"--stdio\", \"-c\", " + jsonString(cfg) + "]\n"},
		{[]string{"--host", "codex", "--http", url, "--name", "my.tools"}, "[mcp_servers.\"my.tools\"]\nurl = \"" + url + "\"\n"},
	}
	for _, tc := range textHosts {
		r := runCLI(t, append([]string{"client-config"}, tc.args...)...)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("%v:\n got  %q (%+v)\n want %q", tc.args, r.stdout, r, tc.want)
		}
	}

	errs := []struct {
		args []string
		msg  string
	}{
		{nil, "--host is required"},
		{[]string{"--host", "emacs"}, `unknown --host "emacs"`},
		{[]string{"--host", "cursor", "--http", "ftp://x"}, "is not an http(s) URL"},
		{[]string{"--host", "cursor", "--http", url, "-c", "tools.hcl"}, "not both"},
		{[]string{"--host", "cursor", "--name", "a b"}, "without spaces"},
	}
	for _, tc := range errs {
		r := runCLI(t, append([]string{"client-config"}, tc.args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%v: %+v, want %q", tc.args, r, tc.msg)
		}
	}
	if r := runCLI(t, "client-config", "--host", "cursor", "-c", "missing.hcl"); r.code != 0 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("missing config: %+v", r)
	}
	if !isTempBuild("/tmp/go-build1234/b001/exe/mcpd") || isTempBuild("/home/u/go/bin/mcpd") {
		t.Error("isTempBuild")
	}
}

func TestLintCommand(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": `tool "t" {
  description = "Search"
  result {
    text = "'ok'"
  }
}
`})
	r := runCLI(t, "lint", "-c", dir)
	want := filepath.Join(dir, "tools.hcl") + `:2:17: warning: One-word description`
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) || strings.TrimSpace(r.stderr) != "1 warning" {
		t.Errorf("lint: %+v\nwant stdout starting %q", r, want)
	}
	if r := runCLI(t, "lint", "-c", dir, "--strict"); r.code != 1 {
		t.Errorf("lint --strict: %+v", r)
	}
	r = runCLI(t, "lint", "-c", dir, "--format", "json")
	var out struct {
		Diagnostics []struct{ Severity, Summary string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || len(out.Diagnostics) != 1 ||
		out.Diagnostics[0].Severity != "warning" || out.Diagnostics[0].Summary != "One-word description" {
		t.Errorf("lint --format json: %v %+v", err, r)
	}
	broken := configDir(t, map[string]string{"tools.hcl": brokenConfig})
	if r := runCLI(t, "lint", "-c", broken); r.code != 1 || !strings.Contains(r.stdout, "Invalid tool name") || !strings.Contains(r.stderr, "fix them first") {
		t.Errorf("lint on a broken config: %+v", r)
	}
	clean := configDir(t, map[string]string{"tools.hcl": `tool "t" {
  description = "Say ok, always."
  result {
    text = "'ok'"
  }
}
`})
	if r := runCLI(t, "lint", "-c", clean, "--strict"); r.code != 0 || r.stdout != "" || strings.TrimSpace(r.stderr) != "no warnings" {
		t.Errorf("lint on a clean config: %+v", r)
	}
}

// init's project works at once with the real binary: validate, lint, call,
// read, prompt, and serve to an MCP client; a second init overwrites nothing.
func TestInit(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "my project")
	mcpd := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := mcpdCommand(args...)
		cmd.Dir = project
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}
	init := mcpdCommand("init", project)
	if out, err := init.CombinedOutput(); err != nil || !strings.Contains(string(out), "created "+filepath.Join(project, "tools.hcl")) {
		t.Fatalf("init: %v\n%s", err, out)
	}
	checks := []struct {
		args   []string
		stdout string
	}{
		{[]string{"validate"}, "tools.hcl: valid (4 tools, 1 resource, 0 resource templates, 1 prompt)"},
		{[]string{"lint", "--strict"}, ""},
		{[]string{"fmt", "--check", "tools.hcl", "tools_test.hcl"}, ""},
		{[]string{"call", "search_notes", "text=welcome"}, "Welcome to my-project"},
		{[]string{"call", "count_words", "text=one two three"}, `{"words":3}`},
		{[]string{"call", "greet", "name=Ada"}, "Hello, Ada!"},
		{[]string{"read", "notes://readme"}, "# my-project"},
		{[]string{"prompt", "summarize_notes"}, "about anything and summarize"},
		{[]string{"prompt", "summarize_notes", "topic=tests"}, "about tests and summarize"},
	}
	for _, c := range checks {
		out, errOut, code := mcpd(c.args...)
		if code != 0 || !strings.Contains(out, c.stdout) {
			t.Errorf("mcpd %v: exit %d\nstdout: %s\nstderr: %s", c.args, code, out, errOut)
		}
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "init-test", Version: "1"}, nil)
	cmd := mcpdCommand("serve", "--stdio")
	cmd.Dir = project
	cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	tools, err := cs.ListTools(bounded(t), nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Errorf("tools/list: %v %v", tools, err)
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"text": "tests"}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "tools_test.hcl calls each tool") {
		t.Errorf("search_notes: %v %v", res, err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	// A second init, or one into a directory holding any of its files,
	// writes nothing.
	before, _ := os.ReadFile(filepath.Join(project, "tools.hcl"))
	out, errOut, code := mcpd("init")
	after, _ := os.ReadFile(filepath.Join(project, "tools.hcl"))
	if code != 1 || !strings.Contains(errOut, "not overwriting") || out != "" || string(before) != string(after) {
		t.Errorf("second init: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	partial := filepath.Join(root, "partial")
	os.Mkdir(partial, 0o755)
	os.WriteFile(filepath.Join(partial, "README.md"), []byte("mine\n"), 0o644)
	if out, err := mcpdCommand("init", partial).CombinedOutput(); err == nil || !strings.Contains(string(out), "README.md") {
		t.Errorf("init over a README: %v %s", err, out)
	}
	if entries, _ := os.ReadDir(partial); len(entries) != 1 {
		t.Errorf("init over a README created files: %v", entries)
	}
}

// docs/cli.md has a section for every command, naming each of its flags.
func TestDocsCLI(t *testing.T) {
	clearEnv(t)
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, part := range strings.Split(string(doc), "\n## mcpd ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		sections[name] = body
	}
	for _, name := range commandNames() {
		body, ok := sections[name]
		if !ok {
			t.Errorf("docs/cli.md has no section for mcpd %s", name)
			continue
		}
		if name == "version" {
			continue // no flags
		}
		help := runCLI(t, "help", name).stdout
		_, flagText, _ := strings.Cut(help, "\nFlags:\n")
		for _, line := range strings.Split(flagText, "\n") {
			f, ok := strings.CutPrefix(line, "  -")
			if !ok {
				continue
			}
			f, _, _ = strings.Cut(f, " ")
			if f == "c" || f == "config" || f == "log-level" || f == "log-format" {
				continue // the common flags, at the top
			}
			if !strings.Contains(body, "`--"+f) {
				t.Errorf("docs/cli.md, mcpd %s: flag --%s is not described", name, f)
			}
		}
	}
}

func TestInstalledBinary(t *testing.T) {
	gobin := t.TempDir()
	t.Setenv("GOBIN", gobin)
	t.Setenv("GOPATH", t.TempDir())
	if p, ok := installedBinary(); ok {
		t.Errorf("found %s in an empty GOBIN", p)
	}
	if err := os.WriteFile(filepath.Join(gobin, "mcpd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, ok := installedBinary(); !ok || p != filepath.Join(gobin, "mcpd") {
		t.Errorf("installedBinary = %q, %v", p, ok)
	}
}

// The files init writes link to nothing that does not exist: mcpd's module
// path is not a published repository (README, "Installing"), so the only
// URLs are the ones the scaffold's tools use. Each URL is paired with the
// files it may appear in.
func TestInitLinks(t *testing.T) {
	allowed := map[string][]string{
		"https://api.github.com":    {"tools.hcl"}, // github_repo's backend
		"http://127.0.0.1:8080/mcp": {"README.md"}, // where mcpd serve listens
	}
	url := regexp.MustCompile(`https?://[^\s"'()<>\x60]+`)
	for _, f := range scaffold("links") {
		for _, u := range url.FindAllString(f.content, -1) {
			if !slices.Contains(allowed[u], f.name) {
				t.Errorf("%s links to %s", f.name, u)
			}
		}
	}
}
