package loader_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// A misspelt name is one error, where it is, naming the name it was meant
// to be: attributes and blocks at every level, adapter blocks and their
// attributes (without a second "missing required" error), backend names.
func TestDidYouMean(t *testing.T) {
	const backends = `database "db" {
  driver = "sqlite"
  dsn    = "file:x.db"
}
http_backend "api" { base_url = "http://127.0.0.1:1" }
`
	tests := []struct {
		name string
		hcl  string // after backends (5 lines)
		pos  string // line:col
		want string // the whole "Summary: Detail"
	}{
		{"tool attribute", `tool "t" {
  descriptoin = "x"
  shell { command = ["true"] }
}`, "7:3", `Unsupported argument: An argument named "descriptoin" is not expected here. Did you mean "description"?`},
		{"tool block", `tool "t" {
  description = "x"
  shell { command = ["true"] }
  reslt { text = "x" }
}`, "9:3", `Unsupported block type: Blocks of type "reslt" are not expected here. Did you mean "result"?`},
		{"adapter block", `tool "t" {
  description = "x"
  shel { command = ["true"] }
}`, "8:3", `Unsupported block type: Blocks of type "shel" are not expected here. Did you mean "shell"?`},
		{"top-level block", `tol "t" {
  description = "x"
}`, "6:1", `Unsupported block type: Blocks of type "tol" are not expected here. Did you mean "tool"?`},
		{"backend block", `databse "d2" {
  driver = "sqlite"
}`, "6:1", `Unsupported block type: Blocks of type "databse" are not expected here. Did you mean "database"?`},
		{"required adapter attribute", `tool "t" {
  description = "x"
  shell { comand = ["true"] }
}`, "8:11", `Unsupported argument: An argument named "comand" is not expected here. Did you mean "command"?`},
		{"param attribute", `tool "t" {
  description = "x"
  param "n" { tpye = "string" }
  shell { command = ["true"] }
}`, "8:15", `Unsupported argument: An argument named "tpye" is not expected here. Did you mean "type"?`},
		{"database name", `tool "t" {
  description = "x"
  sql {
    database = "dbb"
    query    = "SELECT 1 AS one"
  }
}`, "9:16", `Unknown database: There is no database named "dbb". Did you mean "db"?`},
		{"http_backend name", `tool "t" {
  description = "x"
  http {
    backend = "apii"
    path    = "/"
  }
}`, "9:15", `Unknown http_backend: There is no http_backend named "apii". Did you mean "api"?`},
		// The result of a tool whose adapter block failed is not checked
		// against the adapter's names (body, rows, ...): they were unknown,
		// and "unknown name body" was a second, misleading error.
		{"database name, with a result", `tool "t" {
  description = "x"
  sql {
    database = "dbb"
    query    = "SELECT 1 AS one"
  }
  result {
    text = "rows[0].one"
  }
  log {
    message = "rows"
  }
}`, "9:16", `Unknown database: There is no database named "dbb". Did you mean "db"?`},
		{"http_backend name, with a result", `tool "t" {
  description = "x"
  http {
    backend = "apii"
    path    = "/"
  }
  result {
    structured = "body"
    content "text" {
      text = "x"
    }
  }
}`, "9:15", `Unknown http_backend: There is no http_backend named "apii". Did you mean "api"?`},
		{"mcp_server name, with a result", `mcp_server "up" {
  command = ["true"]
}
tool "t" {
  description = "x"
  mcp {
    server = "upp"
  }
  result {
    text = "content[0].text"
  }
}`, "12:14", `Unknown mcp_server: There is no mcp_server named "upp". Did you mean "up"?`},
		{"param type value", `tool "t" {
  description = "x"
  param "n" { type = "strin" }
  shell { command = ["true"] }
}`, "8:22", `Invalid param type: param "n": type "strin" is not one of string, integer, number, boolean, array, object. Did you mean "string"?`},
		{"param type alias", `tool "t" {
  description = "x"
  param "n" {
    type = "int"
  }
  shell { command = ["true"] }
}`, "9:12", `Invalid param type: param "n": type "int" is not one of string, integer, number, boolean, array, object. Did you mean "integer"?`},
		{"ask field type", `tool "t" {
  description = "x"
  ask "why" {
    elicit = "Why?"
    field "reason" { type = "sting" }
  }
  shell { command = ["true"] }
}`, "10:29", `Invalid param type: param "reason": type "sting" is not one of string, integer, number, boolean, array, object. Did you mean "string"?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "tools.hcl")
			if err := os.WriteFile(path, []byte(backends+tc.hcl+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			l := loader.Load([]string{path}, allAdapters(), nil, "test")
			if l.Snapshot != nil {
				l.Snapshot.Close()
			}
			var errs hcl.Diagnostics
			for _, d := range l.Diagnostics {
				if d.Severity == hcl.DiagError {
					errs = append(errs, d)
				}
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got:\n%s", render(l.Diagnostics))
			}
			if got, want := config.Pos(*errs[0].Subject), path+":"+tc.pos; got != want {
				t.Errorf("at %s, want %s", got, want)
			}
			if got := errs[0].Summary + ": " + errs[0].Detail; got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
