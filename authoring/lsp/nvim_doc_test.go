package lsp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The neovim set-up docs/cli.md gives, run as written as the init.lua of
// the installed neovim (Debian's is 0.7.2, which lacks vim.lsp.start and
// vim.fs): opening a config with a mistake starts `mcpd lsp` (this test
// binary, named mcpd on the PATH) and shows its diagnostic; a second file
// of the directory shares the server.
func TestNeovimDocSnippet(t *testing.T) {
	nvim, err := exec.LookPath("nvim")
	if err != nil {
		if os.Getenv("MCPD_TEST_REQUIRE_NVIM") != "" {
			t.Fatal("nvim is not installed and MCPD_TEST_REQUIRE_NVIM is set")
		}
		t.Skip("nvim is not installed (apt-get install neovim); set MCPD_TEST_REQUIRE_NVIM=1 to make this a failure")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\\*\\*neovim\\*\\*.*?```lua\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/cli.md has no neovim lua block")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(bin, "mcpd")); err != nil {
		t.Fatal(err)
	}
	initLua := filepath.Join(dir, "init.lua")
	if err := os.WriteFile(initLua, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "conf")
	os.Mkdir(conf, 0o755)
	bad := filepath.Join(conf, "tools.hcl")
	other := filepath.Join(conf, "more.hcl")
	os.WriteFile(bad, []byte("tool \"hello\" {\n  descripton = \"Says hello\"\n}\n"), 0o644)
	os.WriteFile(other, []byte("# more tools\n"), 0o644)
	out := filepath.Join(dir, "out.txt")
	// What the user would see: the diagnostics of the buffer, and how many
	// clients serve the two buffers.
	check := `lua local ok = vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local lines = {}
for _, d in ipairs(vim.diagnostic.get(0)) do table.insert(lines, (d.lnum + 1) .. ': ' .. d.message) end
vim.cmd('edit ` + other + `')
vim.wait(10000, function() return next(vim.lsp.buf_get_clients(0)) ~= nil end, 50)
table.insert(lines, 'clients: ' .. #vim.lsp.get_active_clients())
vim.fn.writefile(lines, '` + out + `')`
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", initLua, "-i", "NONE", "-n", bad, "-c", check, "-c", "qa!")
	cmd.Dir = conf
	cmd.Env = append(os.Environ(), "MCPD_LSP_TEST_SERVE=1", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "XDG_CACHE_HOME="+dir, "XDG_DATA_HOME="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nvim: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("nvim wrote nothing: %v", err)
	}
	got := string(b)
	if !strings.Contains(got, "2: ") || !strings.Contains(got, "descripton") {
		t.Errorf("neovim showed no diagnostic on line 2 for the misspelt attribute:\n%s", got)
	}
	if !strings.Contains(got, "clients: 1\n") {
		t.Errorf("want one server for the directory's two files:\n%s", got)
	}
}
