package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/adapters/mcpadapter/mcptest"
)

// Every `mcpd init --template` project passes validate, lint --strict and
// fmt --check as written, and its tools_test.hcl passes `mcpd test`:
// offline for starter, sqlite and github, against the test databases for
// postgres and mysql, and through server-everything for gateway (its
// npx command replaced by the local Node and script).
func TestInitTemplates(t *testing.T) {
	for _, name := range templateNames {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			dir := filepath.Join(t.TempDir(), "shop-"+name)
			if r := runCLI(t, "init", "--template", name, dir); r.code != 0 || !strings.Contains(r.stdout, "created "+filepath.Join(dir, "tools.hcl")) {
				t.Fatalf("init: %+v", r)
			}
			tools, err := os.ReadFile(filepath.Join(dir, "tools.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(tools), `name         = "shop-`+name+`"`) || strings.Contains(string(tools), "__PROJECT__") {
				t.Errorf("tools.hcl does not name the project:\n%s", tools)
			}
			if r := runCLI(t, "validate", "-c", dir); r.code != 0 || !strings.Contains(r.stdout, "tools.hcl: valid") {
				t.Errorf("validate: %+v", r)
			}
			if r := runCLI(t, "lint", "--strict", "-c", dir); r.code != 0 || r.stdout != "" {
				t.Errorf("lint --strict: %+v", r)
			}
			if r := runCLI(t, "fmt", "--check", dir); r.code != 0 {
				t.Errorf("fmt --check: %+v", r)
			}
			switch name {
			case "postgres":
				dsn := os.Getenv("MCPD_TEST_POSTGRES_DSN")
				if dsn == "" {
					t.Skip("MCPD_TEST_POSTGRES_DSN not set: mcpd test of the postgres template needs a database")
				}
				t.Setenv("DATABASE_URL", dsn)
			case "mysql":
				dsn := os.Getenv("MCPD_TEST_MYSQL_DSN")
				if dsn == "" {
					t.Skip("MCPD_TEST_MYSQL_DSN not set: mcpd test of the mysql template needs a database")
				}
				t.Setenv("MYSQL_DSN", dsn)
			case "gateway":
				node, script := mcptest.Everything(t)
				npx := `["npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]`
				if !strings.Contains(string(tools), npx) {
					t.Fatalf("the gateway template does not run %s", npx)
				}
				local := strings.Replace(string(tools), npx, `["`+node+`", "`+script+`", "stdio"]`, 1)
				if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(local), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := runCLI(t, "test", "-c", dir)
			if r.code != 0 || !strings.Contains(r.stdout, " passed, 0 failed") || strings.Contains(r.stdout, "\n0 passed") {
				t.Errorf("mcpd test: %+v", r)
			}
		})
	}
	if r := runCLI(t, "init", "--template", "nosuch", t.TempDir()); r.code == 0 || !strings.Contains(r.stderr, `there is no template "nosuch"; the templates are starter, sqlite`) {
		t.Errorf("an unknown template: %+v", r)
	}
}
