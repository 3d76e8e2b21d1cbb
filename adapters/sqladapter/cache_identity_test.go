package sqladapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
)

// TestSharedCacheRefusedWithIdentity: a tool whose database session is set
// from the caller's claims answers each caller after their own
// permissions, so a cache entry shared between callers would serve one
// tenant's rows to another: a load error at the shared attribute, whether
// the tool or the server's default asks for it.
func TestSharedCacheRefusedWithIdentity(t *testing.T) {
	const base = `auth {
  api_key "acme" {
    value      = "acme-key-0123456789"
    attributes = { tenant = "acme" }
  }
}

server {
  cache {
    shared = %s
  }
}

database "orders" {
  driver = "postgres"
  dsn    = "postgres://u@127.0.0.1:5432/db"
  identity {
    setting "tenant" { from_caller = "claims.tenant" }
  }
}

tool "orders" {
  description = "The caller's orders."
  cache {
    %s
  }
  sql {
    database = "orders"
    query    = "SELECT 1"
  }
}
`
	cases := []struct {
		name, server, tool, want string
	}{
		{"tool shares", "false", "shared = true", "tools.hcl:25,5-18: Shared cache on a tool that acts as the caller"},
		{"server default shares", "true", "", "tools.hcl:24,3-8: Shared cache on a tool that acts as the caller"},
		{"private", "true", "shared = false", ""},
		{"private by default", "false", "", ""},
	}
	reg := adapter.NewRegistry()
	reg.Register("sql", New())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := strings.Replace(strings.Replace(base, "%s", tc.server, 1), "%s", tc.tool, 1)
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			l := loader.Load([]string{dir}, reg, nil, "test")
			if l.Snapshot != nil {
				defer l.Snapshot.Close()
			}
			var all []string
			for _, d := range l.Diagnostics {
				all = append(all, d.Error())
			}
			text := strings.Join(all, "\n")
			if tc.want == "" {
				if l.Snapshot == nil {
					t.Fatalf("does not load:\n%s", text)
				}
				return
			}
			if l.Snapshot != nil || !strings.Contains(text, tc.want) {
				t.Errorf("loaded=%v, diagnostics:\n%s\nwant an error containing %q", l.Snapshot != nil, text, tc.want)
			}
		})
	}
}
