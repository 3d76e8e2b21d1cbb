package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// examples/git through the whole engine (redaction included), with real git:
// whatever directory the tools run in, git_diff's path is relative to the
// repository root, so a modified file anywhere in the tree is never "No
// changes.". Without GIT_REPO the tools run in the config's directory, a
// subdirectory of the repository (as examples/git is in the mcpd checkout).
func TestGitExampleDiffFromRoot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	clearEnv(t)
	t.Setenv("HOME", t.TempDir())
	repo := t.TempDir()
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "git", "tools.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	gitIn("init", "-q")
	write("top.txt", "a\n")
	write("sub/s.txt", "b\n")
	write("tools/tools.hcl", string(src))
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "init")
	write("top.txt", "a\nchanged\n")
	config := filepath.Join(repo, "tools")

	for _, gitRepo := range []string{"", repo} {
		name := "GIT_REPO unset"
		if gitRepo != "" {
			name = "GIT_REPO set"
		}
		t.Run(name, func(t *testing.T) {
			if gitRepo == "" {
				os.Unsetenv("GIT_REPO")
			} else {
				t.Setenv("GIT_REPO", gitRepo)
			}
			tests := []struct {
				args []string
				want []string
				not  []string
			}{
				{[]string{"git_diff"}, []string{"top.txt | 1 +", "+changed"}, []string{"No changes."}},
				{[]string{"git_diff", "path=."}, []string{"+changed"}, nil},
				{[]string{"git_diff", "path=top.txt"}, []string{"+changed"}, nil},
				{[]string{"git_diff", "path=./top.txt"}, []string{"+changed"}, nil},
				{[]string{"git_diff", "path=sub"}, []string{"No changes."}, []string{"+changed"}},
				{[]string{"git_diff", "path=*.txt"}, []string{"No changes."}, []string{"+changed"}}, // a path, not a glob
				{[]string{"git_status"}, []string{" M top.txt"}, nil},
			}
			for _, tc := range tests {
				r := runCLI(t, append([]string{"call", "-c", config}, tc.args...)...)
				if r.code != 0 {
					t.Errorf("%v: %+v", tc.args, r)
					continue
				}
				for _, w := range tc.want {
					if !strings.Contains(r.stdout, w) {
						t.Errorf("%v: output lacks %q:\n%s", tc.args, w, r.stdout)
					}
				}
				for _, w := range append(tc.not, "[redacted]") {
					if strings.Contains(r.stdout, w) {
						t.Errorf("%v: output has %q:\n%s", tc.args, w, r.stdout)
					}
				}
			}
		})
	}
}
