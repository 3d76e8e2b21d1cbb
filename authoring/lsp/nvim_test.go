package lsp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/authoring/lsp"
)

// TestMain lets the test binary be the server neovim starts: with
// MCPD_LSP_TEST_SERVE=1 it serves LSP on stdio, as `mcpd lsp` does.
func TestMain(m *testing.M) {
	if os.Getenv("MCPD_LSP_TEST_SERVE") == "1" {
		srv := lsp.New(registry(), lsp.Options{})
		_ = srv.Serve(context.Background(), stdio{})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }

// TestNeovim drives the server from neovim's own LSP client (headless,
// scripted by testdata/nvim.lua) on the GitHub example: diagnostics of the
// file as opened and after an edit, completion, hover and definition.
func TestNeovim(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		if os.Getenv("MCPD_TEST_REQUIRE_NVIM") != "" {
			t.Fatal("nvim is not installed and MCPD_TEST_REQUIRE_NVIM is set")
		}
		t.Skip("nvim is not installed (apt-get install neovim); set MCPD_TEST_REQUIRE_NVIM=1 to make this a failure")
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "github", "tools.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tools.hcl")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "nvim.lua"))
	outFile := filepath.Join(dir, "out.json")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", "luafile "+script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCPD_LSP_TEST_SERVE=1", "MCPD_LSP_CMD="+exe, "MCPD_LSP_FILE="+file, "MCPD_LSP_OUT="+outFile, "HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_CACHE_HOME="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatalf("nvim wrote no results: %v", err)
	}
	var out struct {
		Error  string `json:"error"`
		Opened []any  `json:"opened"`
		Edited []struct {
			Message string `json:"message"`
			Range   struct {
				Start struct{ Line, Character int } `json:"start"`
			} `json:"range"`
		} `json:"edited"`
		Completion []string `json:"completion"`
		Hover      string   `json:"hover"`
		Definition any      `json:"definition"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if out.Error != "" {
		t.Fatalf("nvim script: %s", out.Error)
	}
	if len(out.Opened) != 0 {
		t.Errorf("diagnostics of the example as opened: %v, want none", out.Opened)
	}
	if len(out.Edited) == 0 || !strings.Contains(out.Edited[0].Message, `There is no http_backend named "githb". Did you mean "github"?`) || out.Edited[0].Range.Start.Line != 37 {
		t.Errorf("diagnostics after the edit = %+v, want the misspelt backend", out.Edited)
	}
	if !slices.Contains(out.Completion, "github") {
		t.Errorf("completion = %q, want github", out.Completion)
	}
	if !strings.Contains(out.Hover, "One MCP tool") {
		t.Errorf("hover = %q", out.Hover)
	}
	def, _ := json.Marshal(out.Definition)
	if !strings.Contains(string(def), `"line":9`) || !strings.Contains(string(def), filepath.ToSlash(file)) {
		t.Errorf("definition = %s, want tools.hcl line 9 (http_backend \"github\")", def)
	}
}
