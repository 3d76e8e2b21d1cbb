package loader_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/mcpadapter"
	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/adapters/sqladapter"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

func allAdapters() *adapter.Registry {
	reg := adapter.NewRegistry()
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.New())
	reg.Register("sql", sqladapter.New())
	reg.Register("mcp", mcpadapter.New(nil))
	return reg
}

// An env() variable that is not set is one diagnostic naming it, at its
// first use, whatever depends on it: a warning when validating without
// secrets (and the config is otherwise checked), an error otherwise. The
// variable MCPD_TEST_UNSET_ENV_13 is never set.
func TestUnsetEnvIsOneDiagnostic(t *testing.T) {
	if _, set := os.LookupEnv("MCPD_TEST_UNSET_ENV_13"); set {
		t.Skip("MCPD_TEST_UNSET_ENV_13 is set")
	}
	tests := []struct {
		name string
		hcl  string
		pos  string // line:col of the one diagnostic
		also string // fragment of its detail, beyond the variable's name
	}{
		{"postgres dsn, tools and result expressions", `database "support" {
  driver = "postgres"
  dsn    = env("MCPD_TEST_UNSET_ENV_13")
}
tool "t" {
  description = "Test tool."
  param "id" { type = "integer" }
  sql {
    database = "support"
    query    = "SELECT id FROM tickets WHERE id = :id"
  }
  result {
    error_when = "row_count == 0"
    structured = "rows[0]"
  }
}
tool "u" {
  description = "Test tool."
  sql {
    database = "support"
    query    = "SELECT 1 AS one"
  }
}
`, "3:12", ""},
		{"http base_url and a header, two uses", `http_backend "api" {
  base_url = env("MCPD_TEST_UNSET_ENV_13")
  headers = { Authorization = "Bearer ${env("MCPD_TEST_UNSET_ENV_13")}" }
}
tool "t" {
  description = "Test tool."
  http {
    backend = "api"
    path    = "/x"
  }
  result { structured = "body" }
}
`, "2:14", "It is read in 2 places"},
		{"shell dir", `tool "t" {
  description = "Test tool."
  shell {
    command = ["pwd"]
    dir     = env("MCPD_TEST_UNSET_ENV_13")
  }
}
`, "5:15", ""},
		{"shell env value", `tool "t" {
  description = "Test tool."
  shell {
    command = ["env"]
    env     = { TOKEN = env("MCPD_TEST_UNSET_ENV_13") }
  }
}
`, "5:25", ""},
	}
	for _, tc := range tests {
		for _, warn := range []bool{true, false} {
			name := tc.name + map[bool]string{true: "/validate", false: "/strict"}[warn]
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "tools.hcl")
				if err := os.WriteFile(path, []byte(tc.hcl), 0o644); err != nil {
					t.Fatal(err)
				}
				l := loader.LoadWith([]string{path}, allAdapters(), nil, "test", loader.Options{UnsetEnvWarning: warn})
				if l.Snapshot != nil {
					defer l.Snapshot.Close()
				}
				if len(l.Diagnostics) != 1 {
					t.Fatalf("want exactly one diagnostic, got %d:\n%s", len(l.Diagnostics), render(l.Diagnostics))
				}
				d := l.Diagnostics[0]
				wantSev := hcl.DiagError
				if warn {
					wantSev = hcl.DiagWarning
				}
				if got, want := config.Pos(*d.Subject), path+":"+tc.pos; got != want || d.Severity != wantSev {
					t.Errorf("got %s (severity %d), want %s (severity %d)", got, d.Severity, want, wantSev)
				}
				text := d.Summary + ": " + d.Detail
				if !strings.Contains(text, "MCPD_TEST_UNSET_ENV_13 is not set") || !strings.Contains(text, tc.also) {
					t.Errorf("diagnostic %q does not name the variable (and %q)", text, tc.also)
				}
				if !warn && l.Snapshot != nil {
					t.Errorf("a snapshot with an unset variable, outside validation")
				}
			})
		}
	}
}

// A variable with a default, or one that is set, is no diagnostic.
func TestSetOrDefaultEnvIsNoDiagnostic(t *testing.T) {
	t.Setenv("MCPD_TEST_SET_ENV_13", "/tmp")
	path := filepath.Join(t.TempDir(), "tools.hcl")
	if err := os.WriteFile(path, []byte(`tool "t" {
  description = "Test tool."
  shell {
    command = ["pwd"]
    dir     = env("MCPD_TEST_SET_ENV_13")
    env     = { A = env("MCPD_TEST_UNSET_ENV_13", "x") }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	l := loader.Load([]string{path}, allAdapters(), nil, "test")
	if len(l.Diagnostics) != 0 || l.Snapshot == nil {
		t.Fatalf("want no diagnostics, got:\n%s", render(l.Diagnostics))
	}
	l.Snapshot.Close()
}
