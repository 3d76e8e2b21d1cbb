package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exactConfig has tools that hand an argument to a real process (printf)
// and to SQLite, and resource templates whose variables reach a file read
// (cat), a shell command and a query.
const exactConfig = `
database "db" {
  driver = "sqlite"
  dsn    = "file:exact.db"
  seed   = <<-SQL
    CREATE TABLE notes (name TEXT PRIMARY KEY, body TEXT);
    INSERT INTO notes VALUES ('alpha', 'first note');
    CREATE TABLE docs (doc JSON);
    INSERT INTO docs VALUES ('{"id": 9007199254740993}');
  SQL
}

tool "argv_int" {
  param "v" {
    type = "integer"
  }
  shell {
    command         = ["printf", "[%s]", args.v]
    allow_dash_args = ["v"] # negative numbers are values here, not options
  }
}

tool "argv_nonneg" {
  param "v" {
    type    = "integer"
    minimum = 0
  }
  shell {
    command = ["printf", "[%s]", args.v]
  }
}

tool "argv_num" {
  param "v" {
    type = "number"
  }
  shell {
    command = ["printf", "[%s]", args.v]
  }
}

tool "bind_int" {
  param "v" {
    type = "integer"
  }
  sql {
    database = "db"
    query    = "SELECT typeof(:v) AS t, CAST(:v AS TEXT) AS s, :v = 9007199254740993 AS exact"
  }
  result {
    text = "rows[0].t + ' ' + rows[0].s + ' ' + string(rows[0].exact)"
  }
}

tool "bind_num" {
  param "v" {
    type = "number"
  }
  sql {
    database = "db"
    query    = "SELECT typeof(:v) AS t, :v / 2 AS half"
  }
  result {
    text = "rows[0].t + ' ' + string(rows[0].half)"
  }
}

tool "json_column" {
  sql {
    database = "db"
    query    = "SELECT doc FROM docs"
  }
  result {
    text = "string(rows[0].doc.id)"
  }
}

# Undeclared variable: a string with the default one-segment rules.
resource_template "file" {
  uri_template = "notes://{name}"
  shell {
    command = ["cat", "notes/${args.name}"]
  }
}

resource_template "shell" {
  uri_template = "echo://{word}"
  param "word" {
    pattern = "^[a-z]+$"
  }
  shell {
    command = ["printf", "<%s>", args.word]
  }
}

resource_template "sql" {
  uri_template = "db://notes/{name}"
  sql {
    database = "db"
    query    = "SELECT body FROM notes WHERE name = :name"
  }
}

resource_template "user" {
  uri_template = "users://{id}"
  param "id" {
    type    = "integer"
    minimum = 1
  }
  shell {
    command = ["printf", "user %s", args.id]
  }
}
`

func TestExactNumbersAndTemplateVariables(t *testing.T) {
	// The notes directory sits beside a secret that ../ would reach.
	dir := configDir(t, map[string]string{"tools.hcl": exactConfig, "secret.txt": "SECRET"})
	if err := os.Mkdir(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "alpha"), []byte("alpha text"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := mcpdCommand("serve", "--stdio", "-c", dir)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-exact", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for _, tc := range []struct {
		tool, args string
		want       string
		isErr      bool
	}{
		{"argv_int", `{"v": 9007199254740993}`, "[9007199254740993]", false},
		{"argv_int", `{"v": 9007199254740993.0}`, "[9007199254740993]", false},
		{"argv_int", `{"v": -9223372036854775808}`, "[-9223372036854775808]", false},
		{"argv_nonneg", `{"v": -0}`, "[0]", false},
		{"argv_num", `{"v": -0.0}`, "[0]", false},
		{"argv_num", `{"v": 0.25}`, "[0.25]", false},
		{"bind_int", `{"v": 9007199254740993}`, "integer 9007199254740993 1", false},
		{"bind_num", `{"v": 3}`, "real 1.5", false},
		{"bind_int", `{"v": -0}`, "integer 0 0", false},
		{"json_column", `{}`, "9007199254740993", false},
		{"argv_int", `{"v": 9223372036854775808}`, `invalid arguments for tool argv_int: argument "v" is out of range: an integer must be between -9223372036854775808 and 9223372036854775807, got 9223372036854775808`, true},
		{"argv_num", `{"v": 1e400}`, `invalid arguments for tool argv_num: argument "v" is out of range: 1e400 is beyond what a 64-bit float holds (about ±1.8e308)`, true},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
			if err != nil {
				t.Fatal(err)
			}
			if got := textOf(res); res.IsError != tc.isErr || got != tc.want {
				t.Errorf("isError=%v text=%q\nwant isError=%v text=%q", res.IsError, got, tc.isErr, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		uri  string
		want string // part of the text, or the error message
		bad  bool
	}{
		{"notes://alpha", "alpha text", false},
		{"echo://hello", "<hello>", false},
		{"db://notes/alpha", "first note", false},
		{"users://42", "user 42", false},
		{"notes://..%2Fsecret.txt", `invalid URI for resource template "file": argument "name" must not contain "/", got "../secret.txt" (a {name} variable is one path segment; allow_slash = true in its param block allows it)`, true},
		{"notes://%2Fetc%2Fhostname", `invalid URI for resource template "file": argument "name" must not contain "/", got "/etc/hostname" (a {name} variable is one path segment; allow_slash = true in its param block allows it)`, true},
		{"notes://..", `invalid URI for resource template "file": argument "name" must not contain a ".." path segment, got ".." (allow_dot_segments = true in its param block allows it)`, true},
		{"notes://alpha%00.txt", `invalid URI for resource template "file": argument "name" must not contain control characters such as NUL, got "alpha\x00.txt"`, true},
		{"echo://..%2Fsecret.txt", `invalid URI for resource template "shell": argument "word" must not contain "/", got "../secret.txt" (a {name} variable is one path segment; allow_slash = true in its param block allows it)`, true},
		{"echo://a%00b", `invalid URI for resource template "shell": argument "word" must not contain control characters such as NUL, got "a\x00b"`, true},
		{"echo://Hello1", `invalid URI for resource template "shell": argument "word" must match the pattern ^[a-z]+$, got "Hello1"`, true},
		{"db://notes/%2Fetc%2Fhostname", `invalid URI for resource template "sql": argument "name" must not contain "/", got "/etc/hostname" (a {name} variable is one path segment; allow_slash = true in its param block allows it)`, true},
		{"db://notes/x%00", `invalid URI for resource template "sql": argument "name" must not contain control characters such as NUL, got "x\x00"`, true},
		{"users://0", `invalid URI for resource template "user": argument "id" must be at least 1, got 0`, true},
		{"users://abc", `invalid URI for resource template "user": argument "id" must be an integer, got string "abc"`, true},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			res, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: tc.uri})
			if tc.bad {
				var we *jsonrpc.Error
				if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != tc.want {
					t.Fatalf("err = %v\nwant -32602 %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Contents[0].Text; !strings.Contains(got, tc.want) {
				t.Errorf("text = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}
