package shell_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
)

// exampleTool is one tool of examples/git/tools.hcl, compiled by the shell
// adapter as the engine would (the engine's own parsing of params and
// annotations is not exercised here).
type exampleTool struct {
	handler adapter.Handler
	params  map[string]string
}

func loadGitExample(t *testing.T) map[string]exampleTool {
	t.Helper()
	path := filepath.Join("..", "..", "examples", "git", "tools.hcl")
	f, diags := hclparse.NewParser().ParseHCLFile(path)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	top, diags := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "tool", LabelNames: []string{"name"}}}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	dir := filepath.Dir(path)
	tools := map[string]exampleTool{}
	for _, tb := range top.Blocks {
		content, _, diags := tb.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
			{Type: "param", LabelNames: []string{"name"}},
			{Type: "shell"},
		}})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		params := map[string]string{}
		var shellBlock *hcl.Block
		for _, b := range content.Blocks {
			if b.Type == "shell" {
				shellBlock = b
				continue
			}
			attrs, diags := b.Body.JustAttributes()
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			v, diags := attrs["type"].Expr.Value(nil)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			params[b.Labels[0]] = v.AsString()
		}
		scope := &adapter.Scope{Dir: dir, Functions: funcs.Table(dir), Params: params}
		h, diags := shell.New().CompileTool(&adapter.ToolBlock{Tool: tb.Labels[0], Type: "shell", Body: shellBlock.Body, Range: shellBlock.DefRange, Scope: scope})
		if len(diags) > 0 {
			t.Fatalf("%s: %s", tb.Labels[0], diags.Error())
		}
		tools[tb.Labels[0]] = exampleTool{h, params}
	}
	return tools
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestGitExample(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	for i, msg := range []string{"first commit", "second commit", "third commit"} {
		if err := os.WriteFile(filepath.Join(repo, "file.txt"), []byte(strings.Repeat("line\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, repo, "add", "file.txt")
		git(t, repo, "commit", "-q", "-m", msg)
	}
	head := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
	// An unstaged change, a staged one and an untracked file.
	if err := os.WriteFile(filepath.Join(repo, "file.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "staged.txt"), []byte("staged\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "staged.txt")
	if err := os.WriteFile(filepath.Join(repo, "-rf"), []byte("odd name\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Setenv("GIT_REPO", repo)
	t.Setenv("HOME", t.TempDir())
	tools := loadGitExample(t)

	run := func(name string, args map[string]any) (*adapter.Output, error) {
		tool, ok := tools[name]
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		return call(context.Background(), tool.handler, tool.params, args, nil)
	}
	cases := []struct {
		tool string
		args map[string]any
		want []string
		not  []string
		err  string
	}{
		{tool: "git_log", args: map[string]any{"n": float64(10)}, want: []string{"third commit", "second commit", "first commit", head[:7]}},
		{tool: "git_log", args: map[string]any{"n": float64(1)}, want: []string{"third commit"}, not: []string{"second commit"}},
		{tool: "git_show", args: map[string]any{"sha": head[:7]}, want: []string{"commit " + head, "third commit", "file.txt | 1 +", "+line"}},
		{tool: "git_show", args: map[string]any{"sha": "0000000"}, err: "git exited with code 128; stderr:\nfatal: bad revision '0000000'"},
		{tool: "git_status", want: []string{"## main", " M file.txt", "A  staged.txt", "?? -rf"}},
		{tool: "git_diff", args: map[string]any{"path": ".", "staged": false}, want: []string{"-line", "+changed"}, not: []string{"staged.txt"}},
		{tool: "git_diff", args: map[string]any{"path": ".", "staged": true}, want: []string{"+staged"}, not: []string{"+changed"}},
		{tool: "git_diff", args: map[string]any{"path": "staged.txt", "staged": false}, not: []string{"+changed"}},
		// A path that looks like an option is a path after "--".
		{tool: "git_diff", args: map[string]any{"path": "--output=/tmp/mcpd-pwned", "staged": false}, not: []string{"+changed"}},
	}
	for _, c := range cases {
		out, err := run(c.tool, c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %v: got %v, want %q", c.tool, c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %v: %v", c.tool, c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out.Text, w) {
				t.Errorf("%s %v: output lacks %q:\n%s", c.tool, c.args, w, out.Text)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out.Text, w) {
				t.Errorf("%s %v: output has %q:\n%s", c.tool, c.args, w, out.Text)
			}
		}
	}
	if _, err := os.Stat("/tmp/mcpd-pwned"); err == nil {
		t.Error("git_diff wrote /tmp/mcpd-pwned")
	}
	out, err := run("git_status", nil)
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := out.Structured["lines"].([]any)
	if len(lines) != 4 || lines[0] != "## main" {
		t.Errorf("git_status structured: %#v", out.Structured)
	}
}
