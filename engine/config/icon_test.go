package config_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/config"
)

// What the server block and icon blocks say about the server is checked
// at load, each problem blamed at its value (file:line:col).
func TestDescribedDiagnostics(t *testing.T) {
	const png = "data:image/png;base64,iVBORw0KGgo="
	tests := []struct {
		name, hcl string
		summary   string // "" for no error
		pos       string // line:col of the subject
		detail    string // a part of the detail
	}{
		{"https icon", `tool "t" {
  icon {
    src   = "https://example.com/t.png"
    sizes = ["48x48", "any"]
    theme = "dark"
  }
}`, "", "", ""},
		{"data icon", `prompt "p" {
  message {
    text = "x"
  }
  icon {
    src = "` + png + `"
    mime_type = "image/png"
  }
}`, "", "", ""},
		{"http icon refused", `tool "t" {
  icon {
    src = "http://example.com/t.png"
  }
}`, "Invalid icon src", "3:11", "https: URL or a data: URI"},
		{"file icon refused", `resource "r" {
  uri  = "x://r"
  text = "r"
  icon {
    src = "file:///etc/passwd"
  }
}`, "Invalid icon src", "5:11", `"file:///etc/passwd" is a file: URI`},
		{"credentials refused", `tool "t" {
  icon {
    src = "https://u:p@example.com/t.png"
  }
}`, "Invalid icon src", "3:11", "credentials"},
		{"data icon not base64", `tool "t" {
  icon {
    src = "data:image/png,abc"
  }
}`, "Invalid icon src", "3:11", "filebase64"},
		{"data icon bad type", `tool "t" {
  icon {
    src = "data:text/html;base64,PGI+"
  }
}`, "Invalid icon src", "3:11", `"text/html"`},
		{"data icon bad base64", `tool "t" {
  icon {
    src = "data:image/png;base64,!!!"
  }
}`, "Invalid icon src", "3:11", "does not decode"},
		{"mime type misspelt", `tool "t" {
  icon {
    src       = "https://example.com/t.png"
    mime_type = "image/pgn"
  }
}`, "Invalid icon mime_type", "4:17", `Did you mean "image/png"?`},
		{"mime type disagrees with data", `tool "t" {
  icon {
    src       = "` + png + `"
    mime_type = "image/webp"
  }
}`, "Conflicting icon mime_type", "4:17", "differs"},
		{"bad size", `tool "t" {
  icon {
    src   = "https://example.com/t.png"
    sizes = ["48"]
  }
}`, "Invalid icon size", "4:13", `"48"`},
		{"bad theme", `resource_template "r" {
  uri_template = "x://{id}"
  text         = "r"
  icon {
    src   = "https://example.com/t.png"
    theme = "drak"
  }
}`, "Invalid icon theme", "6:13", `Did you mean "dark"?`},
		{"server icon checked", `server {
  icon {
    src = "ftp://example.com/s.png"
  }
}`, "Invalid icon src", "3:11", "ftp: URI"},
		{"server identity", `server {
  name        = "com.example/tickets"
  title       = "Tickets"
  version     = "1.2.0"
  description = "Search and update support tickets."
  website_url = "https://example.com/tickets"
}`, "", "", ""},
		{"registry name malformed", `server {
  name = "example/tickets/v2"
}`, "Invalid server name", "2:10", "reverse-DNS"},
		{"version range", `server {
  version = "^1.2.0"
}`, "Invalid server version", "2:13", "range"},
		{"description too long", `server {
  description = "` + strings.Repeat("x", 101) + `"
}`, "Server description too long", "2:17", "101 characters"},
		{"website url relative", `server {
  website_url = "example.com"
}`, "Invalid website_url", "2:17", "absolute"},
		{"toolset name reserved", `tool "t" {
  description = "t"
}
toolset "server-card" {
  tools = ["t"]
}`, "Reserved toolset name", "4:9", "Server Card of /mcp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.hcl")
			writeFile(t, path, tc.hcl+"\n")
			_, diags := config.Load([]string{path}, config.Blocks{})
			if tc.summary == "" {
				if diags.HasErrors() {
					t.Fatalf("want no error, got %s", diags.Error())
				}
				return
			}
			for _, d := range diags {
				if d.Summary == tc.summary {
					if got := config.Pos(*d.Subject); got != path+":"+tc.pos {
						t.Errorf("%s at %s, want %s:%s", tc.summary, got, path, tc.pos)
					}
					if !strings.Contains(d.Detail, tc.detail) {
						t.Errorf("detail %q lacks %q", d.Detail, tc.detail)
					}
					return
				}
			}
			t.Fatalf("want %q, got %v", tc.summary, diags)
		})
	}
}

// Icons and the server's description are kept for the snapshot.
func TestIconsDecoded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.hcl")
	writeFile(t, path, `server {
  description = "Tickets."
  icon {
    src   = "https://example.com/s.svg"
    sizes = ["any"]
    theme = "light"
  }
}
tool "t" {
  description = "t"
  icon {
    src = "https://example.com/t.png"
  }
  icon {
    src = "https://example.com/t-dark.png"
    theme = "dark"
  }
}
`)
	cfg := mustLoad(t, path)
	if cfg.Server.Description != "Tickets." || len(cfg.Server.Icons) != 1 || cfg.Server.Icons[0].Theme != "light" || cfg.Server.Icons[0].Sizes[0] != "any" {
		t.Errorf("server = %+v", cfg.Server)
	}
	if len(cfg.Tools[0].Icons) != 2 || cfg.Tools[0].Icons[1].Src != "https://example.com/t-dark.png" {
		t.Errorf("tool icons = %+v", cfg.Tools[0].Icons)
	}
}
