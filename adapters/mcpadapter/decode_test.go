package mcpadapter_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
)

// Each broken block is paired with the diagnostic it must produce, at its
// line; a valid config loads without touching the network or starting
// anything.
func TestDecodeDiagnostics(t *testing.T) {
	tool := "\ntool \"t\" {\n  description = \"d\"\n  mcp {\n    server = \"gh\"\n  }\n}\n"
	tests := []struct {
		name, config, want string
	}{
		{"neither command nor url", `mcp_server "gh" {}` + tool, "Missing command or url"},
		{"both", `mcp_server "gh" {
  command = ["x"]
  url     = "http://127.0.0.1:1/mcp"
}` + tool, "Both command and url"},
		{"empty command", `mcp_server "gh" {
  command = []
}` + tool, "Invalid command"},
		{"url scheme", `mcp_server "gh" {
  url = "ftp://example.com/mcp"
}` + tool, "Invalid url"},
		{"credentials in url", `mcp_server "gh" {
  url = "https://user:pw@example.com/mcp"
}` + tool, "must not carry credentials"},
		{"headers on stdio", `mcp_server "gh" {
  command = ["x"]
  headers = { A = "b" }
}` + tool, "headers without url"},
		{"fast_path on stdio", `mcp_server "gh" {
  command   = ["x"]
  fast_path = false
}` + tool, "fast_path without url"},
		{"fast_path not a bool", `mcp_server "gh" {
  url       = "http://127.0.0.1:1/mcp"
  fast_path = "sometimes"
}` + tool, "fast_path"},
		{"env on http", `mcp_server "gh" {
  url = "http://127.0.0.1:1/mcp"
  env = { A = "b" }
}` + tool, "env without command"},
		{"protocol version", `mcp_server "gh" {
  command          = ["x"]
  protocol_version = "2099-01-01"
}` + tool, "Unknown protocol_version"},
		{"answer_timeout over a requestState's life", `mcp_server "gh" {
  command        = ["x"]
  answer_timeout = "1h"
}` + tool, "answer_timeout"},
		{"max_idle_sessions on stdio", `mcp_server "gh" {
  command           = ["x"]
  max_idle_sessions = 4
}` + tool, "max_idle_sessions without url"},
		{"max_idle_sessions out of range", `mcp_server "gh" {
  url               = "http://127.0.0.1:1/mcp"
  max_idle_sessions = 1000
}` + tool, "max_idle_sessions"},
		{"idle_session_timeout too short", `mcp_server "gh" {
  url                  = "http://127.0.0.1:1/mcp"
  idle_session_timeout = "1ms"
}` + tool, "idle_session_timeout"},
		{"start", `mcp_server "gh" {
  command = ["x"]
  start   = "now"
}` + tool, "Invalid start"},
		{"when_down", `mcp_server "gh" {
  command = ["x"]
  expose {
    when_down = "maybe"
  }
}` + tool, "Invalid when_down"},
		{"bad pattern", `mcp_server "gh" {
  command = ["x"]
  expose {
    include = ["[a"]
  }
}` + tool, "Invalid pattern"},
		{"bad rename", `mcp_server "gh" {
  command = ["x"]
  expose {
    rename = { a = "no spaces allowed" }
  }
}` + tool, "Invalid tool name"},
		{"unknown server", `mcp_server "gha" {
  command = ["x"]
}` + tool, `Did you mean "gha"?`},
		{"arguments not an object", `mcp_server "gh" {
  command = ["x"]
}
tool "t" {
  description = "d"
  mcp {
    server    = "gh"
    arguments = "b"
  }
}`, "Invalid arguments"},
		{"arguments reference an unknown param", `mcp_server "gh" {
  command = ["x"]
}
tool "t" {
  description = "d"
  mcp {
    server    = "gh"
    arguments = { b = args.nope }
  }
}`, "nope"},
		{"identity on stdio", `mcp_server "gh" {
  command = ["x"]
  identity {
    mode = "client_credentials"
  }
}` + tool, "identity without url"},
		{"identity mode", `mcp_server "gh" {
  url = "https://mcp.example.com/mcp"
  identity {
    mode = "token-exchange"
  }
}` + tool, `Did you mean "token_exchange"?`},
		{"identity passthrough without auth", `mcp_server "gh" {
  url = "https://mcp.example.com/mcp"
  identity {
    mode     = "passthrough"
    audience = "https://mcp.example.com"
  }
}` + tool, "this config has no auth block"},
		{"identity beside an Authorization header", `mcp_server "gh" {
  url     = "https://mcp.example.com/mcp"
  headers = { authorization = "Bearer x" }
  identity {
    mode          = "client_credentials"
    token_url     = "https://as.example.com/token"
    client_id     = "mcpd"
    client_secret = "s3cret-s3cret"
  }
}` + tool, "headers sets Authorization"},
		{"identity token_url over http", `mcp_server "gh" {
  url = "https://mcp.example.com/mcp"
  identity {
    mode          = "client_credentials"
    token_url     = "http://as.example.com/token"
    client_id     = "mcpd"
    client_secret = "s3cret-s3cret"
  }
}` + tool, "must use https"},
		{"valid", `mcp_server "gh" {
  command = ["/nonexistent/server", "stdio"]
  env     = { TOKEN = "secret-value" }
  expose {
    prefix  = "gh_"
    exclude = ["delete_*"]
    scopes  = ["gh"]
  }
}
mcp_server "remote" {
  url                  = "https://mcp.example.com/mcp"
  headers              = { Authorization = "Bearer x" }
  max_idle_sessions    = 0
  idle_session_timeout = "30s"
}
mcp_server "service" {
  url = "https://tools.example.com/mcp"
  identity {
    mode          = "client_credentials"
    token_url     = "https://as.example.com/token"
    client_id     = "mcpd"
    client_secret = "s3cret-s3cret"
    scopes        = ["tools.read"]
  }
}
tool "t" {
  description = "d"
  param "q" {
    type = "string"
  }
  mcp {
    server    = "gh"
    tool      = "search"
    arguments = { owner = "acme", query = args.q }
  }
}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			reg := adapter.NewRegistry()
			builtin.Register(reg)
			l := loader.Load([]string{dir}, reg, nil, "test")
			var msgs []string
			for _, d := range l.Diagnostics {
				if d.Severity == 1 { // hcl.DiagError
					msgs = append(msgs, d.Summary+": "+d.Detail)
					if d.Subject == nil || d.Subject.Start.Line == 0 {
						t.Errorf("diagnostic without a range: %s", d.Summary)
					}
					if strings.Contains(d.Detail, "s3cret-s3cret") {
						t.Errorf("a diagnostic shows the client secret: %s", d.Detail)
					}
				}
			}
			all := strings.Join(msgs, "\n")
			switch {
			case tc.want == "" && l.Snapshot == nil:
				t.Fatalf("want a valid config, got:\n%s", all)
			case tc.want != "" && !strings.Contains(all, tc.want):
				t.Fatalf("want a diagnostic containing %q, got:\n%s", tc.want, all)
			}
			if l.Snapshot != nil {
				l.Snapshot.Close()
			}
		})
	}
}
