package lint_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/adapters/sqladapter"
	"github.com/mcpd/mcpd/authoring/lint"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
)

func registry() *adapter.Registry {
	reg := adapter.NewRegistry()
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.New())
	reg.Register("sql", sqladapter.New())
	return reg
}

// lintText writes text as tools.hcl in a new directory and returns the
// warnings as "line:col: summary".
func lintText(t *testing.T, text string) []string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.hcl")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registry()
	cfg, diags := config.Load([]string{path}, config.Blocks{Adapters: reg.ToolBlocks(), Backends: reg.BackendBlocks()})
	if diags.HasErrors() {
		t.Fatalf("config does not load: %v", diags)
	}
	var got []string
	for _, d := range lint.Lint(cfg, reg) {
		if d.Subject == nil {
			t.Fatalf("warning without a position: %v", d)
		}
		got = append(got, config.Pos(*d.Subject)[len(dir)+len("/tools.hcl:"):]+": "+d.Summary)
	}
	return got
}

const db = `
database "main" {
  driver = "sqlite"
  dsn    = "file:test.db"
}
`

func TestLint(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"clean", db + `
tool "find" {
  description = "Find rows by name."
  annotations {
    read_only = true
  }
  param "name" {
    type        = "string"
    description = "The name to find"
  }
  sql {
    database = "main"
    query    = "SELECT * FROM t WHERE name = :name"
  }
}

tool "add" {
  description = "Add a row to the table."
  annotations {
    destructive = false
  }
  param "name" {
    type        = "string"
    description = "The row's name"
  }
  sql {
    database  = "main"
    read_only = false
    query     = "INSERT INTO t (name) VALUES (:name)"
  }
}

tool "echo" {
  description = "Echo the text back."
  param "text" {
    type        = "string"
    description = "What to echo"
  }
  shell {
    command = ["cat"]
    stdin   = args.text
    env     = { TOKEN = env("TOKEN") }
  }
}

http_backend "api" {
  base_url = "https://api.example.com"
  headers  = { Authorization = "Bearer ${env("API_TOKEN")}" }
}

tool "pixel" {
  description = "Return an inline image."
  result {
    content "image" {
      data      = "UvImZaYMEtKJGF2VDuiBNgkWb2sRPReNbA/TkB/yOaGglfIPk5VlDPk4C47bIkprJIoekk6P0K4uGpSSozBfGIy2EJAPnjR/rohtxlB3lex0XEw/yy6yxz4Uk0yGfuBXunJJm/oSHoNrKsFXJu59awr2qxPDjpLK4NFQV7FZmH+UzHQR1xfxRXmyqhAPu7NPpZP+rtJySLdi46tYBfB2WiucHX4PN8RJIb0/ZWTq338UKnJmjEfiI9Fu3YxHtGr8W67iYfU7JhUtJjuoOwN81JYuQ0gBJWuIXpyQUfMgsNuD856nrb0NdObex/PfrsyPZGVmZBp7omYPMBH8NXApHFeZDRoAkSaJGfJdnQYS3zWdYCaiQPRYml15Hx3ZfP76d3p7TxUkGr9XvUN6"
      mime_type = "image/png"
    }
  }
}

prompt "p" {
  description = "A prompt with an optional argument."
  argument "focus" {
    description = "What to focus on"
  }
  message {
    text = "Focus on ${coalesce(args.focus, "everything")} and ${args.focus == null ? "all" : args.focus}."
  }
}
`, nil},
		{"missing and one-word descriptions", `
tool "a" {
  param "x" {
    type = "string"
  }
  param "y" {
    type        = "string"
    description = "Name"
  }
  result {
    text = "'ok'"
  }
}

tool "b" {
  description = "Search"
  result {
    text = "'ok'"
  }
}
`, []string{
			"2:6: Tool without a description",
			"3:9: Param without a description",
			"8:19: One-word description",
			"16:17: One-word description",
		}},
		{"sql write without destructive", db + `
tool "del" {
  description = "Delete a row by id."
  param "id" {
    type        = "integer"
    description = "The row's id"
  }
  sql {
    database  = "main"
    read_only = false
    query     = <<-SQL
      DELETE FROM t WHERE id = :id
    SQL
  }
}
`, []string{"17:7: Writing tool without a destructive annotation"}},
		{"sql write annotated read-only", db + `
tool "upd" {
  description = "Update a row's name."
  annotations {
    read_only   = true
    destructive = true
  }
  sql {
    database  = "main"
    read_only = false
    query     = "UPDATE t SET name = 'x'"
  }
}
`, []string{"16:18: Writing tool annotated read-only"}},
		{"read-only query not annotated", db + `
tool "list" {
  description = "List all the rows."
  sql {
    database = "main"
    query    = "  SELECT * FROM t"
  }
}
`, []string{"11:19: Read-only tool not annotated read_only"}},
		{"optional prompt argument without coalesce", `
prompt "review" {
  description = "Review some code."
  argument "lang" {
    description = "The language"
    required    = true
  }
  argument "focus" {
    description = "What to focus on"
  }
  message {
    text = "Review this ${args.lang} code, focusing on ${args.focus}."
  }
  message {
    role = "assistant"
    content "text" {
      text = "Focus: ${upper(args.focus)}"
    }
  }
}
`, []string{
			"12:58: Optional argument used without coalesce",
			"17:30: Optional argument used without coalesce",
		}},
		{"inline secrets", `
http_backend "gh" {
  base_url = "https://api.github.com"
  headers = {
    Authorization = "Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    "X-Api-Key"   = "hunter2"
  }
}

database "pg" {
  driver   = "postgres"
  dsn      = "postgres://app:s3cret@db.example.com/app"
  password = "x"
}

tool "aws" {
  description = "Call AWS with a key."
  shell {
    command = ["aws", "s3", "ls"]
    env = {
      AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
      SIGNING           = "q8Xr2LmZ0vKp7TnY4wHs9BcJ1eUa6DfG3iRo5NtQ"
      HOME              = "/home/app"
      SHA               = "3f786850e387550fdab836ed7e6dc881de23001b"
    }
  }
}
`, []string{
			"5:21: Inline secret",
			"6:21: Inline secret",
			"12:15: Inline secret",
			"13:14: Inline secret",
			"21:28: Inline secret",
			"22:28: Inline secret",
		}},
		{"inline icon is no secret", `
tool "t" {
  description = "A tool with an inline icon."
  icon {
    src = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAI0lEQVR42mP4//8/AyWYYXAZoJF34j8xeNSAUQNoa8DQzEwApTW+n17hH54AAAAASUVORK5CYII="
  }
}
`, nil},
		{"shell inherit_env", `
tool "run" {
  description = "Run the build script."
  annotations {
    read_only = true
  }
  shell {
    command     = ["make"]
    inherit_env = true
  }
}

tool "run2" {
  description = "Run the build script too."
  shell {
    command     = ["make"]
    inherit_env = false
  }
}
`, []string{"9:5: Shell tool inherits the whole environment"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := lintText(t, tc.text)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("warnings:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}
