package main

import (
	"embed"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const initUsage = `usage: mcpd init [--template NAME] [DIR]

Scaffolds a project in DIR (default: the current directory, created when
missing). It refuses to overwrite any existing file. Each template's
project passes mcpd validate, lint --strict and fmt --check as written, and
its tools_test.hcl passes mcpd test (against the database for postgres and
mysql, which read DATABASE_URL and MYSQL_DSN).

Templates:
  starter   (the default) one tool per adapter: sql on a seeded SQLite
            file, shell (wc), http (GitHub, tested against a mock), and one
            declared in HCL alone; a resource and a prompt
  sqlite    a SQLite database: list_tables, describe_table, a search
  postgres  a PostgreSQL database (DATABASE_URL): list_tables, describe_table
  mysql     a MySQL or MariaDB database (MYSQL_DSN): list_tables, describe_table
  github    GitHub's REST API (GITHUB_TOKEN optional): get_repo,
            list_issues, search_repositories, tested against mocks
  gateway   mcpd in front of an existing MCP server (started with npx)

For an API with an OpenAPI document, use mcpd import openapi instead.
`

// templateFS holds the templates other than the starter, one directory
// each; __PROJECT__ in a file becomes the project's name.
//
//go:embed templates
var templateFS embed.FS

// templateNames are the templates, the default first.
var templateNames = []string{"starter", "sqlite", "postgres", "mysql", "github", "gateway"}

// initCmd writes the scaffold. Every file is checked first and then created
// with O_EXCL, so that init never overwrites anything, even a file that
// appears while it runs.
func initCmd(args []string, stdout, stderr io.Writer) error {
	fs := newBareFlagSet("init", stderr)
	tmpl := fs.String("template", "starter", "the kind of project: "+strings.Join(templateNames, ", "))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("unexpected arguments %q: give at most one directory (flags go before it)", fs.Args()[1:])
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	name := projectName(filepath.Base(abs))
	files, err := templateFiles(*tmpl, name)
	if err != nil {
		return err
	}
	var exists []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, f.name)); err == nil {
			exists = append(exists, filepath.Join(dir, f.name))
		} else if !errors.Is(err, iofs.ErrNotExist) {
			return err
		}
	}
	if len(exists) > 0 {
		return fmt.Errorf("not overwriting %s: run init in an empty directory (or move them away)", strings.Join(exists, ", "))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("creating %s: %w", path, err)
		}
		_, err = io.WriteString(w, f.content)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(stdout, "created %s\n", path)
	}
	cd := ""
	if dir != "." {
		cd = fmt.Sprintf("cd %s && ", shellQuote(dir))
	}
	switch *tmpl {
	case "postgres":
		fmt.Fprintf(stdout, "\nNext: %sexport DATABASE_URL=postgres://... && mcpd validate && mcpd test && mcpd serve\n", cd)
	case "mysql":
		fmt.Fprintf(stdout, "\nNext: %sexport MYSQL_DSN='user:password@tcp(host:3306)/db' && mcpd validate && mcpd test && mcpd serve\n", cd)
	case "gateway":
		fmt.Fprintf(stdout, "\nNext: %smcpd validate && mcpd serve (the upstream's first start through npx can take 10-20 s)\n", cd)
	default:
		fmt.Fprintf(stdout, "\nNext: %smcpd validate && mcpd test && mcpd serve\n", cd)
	}
	return nil
}

// templateFiles are the files of a template for the project name.
func templateFiles(tmpl, name string) ([]scaffoldFile, error) {
	if tmpl == "starter" {
		return scaffold(name), nil
	}
	if !slices.Contains(templateNames, tmpl) {
		return nil, fmt.Errorf("there is no template %q; the templates are %s", tmpl, strings.Join(templateNames, ", "))
	}
	entries, err := templateFS.ReadDir("templates/" + tmpl)
	if err != nil {
		return nil, err
	}
	var files []scaffoldFile
	for _, e := range entries {
		b, err := templateFS.ReadFile("templates/" + tmpl + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		files = append(files, scaffoldFile{e.Name(), strings.ReplaceAll(string(b), "__PROJECT__", name)})
	}
	return append(files, scaffoldFile{".gitignore", ".mcpd/\n"}), nil
}

// projectName makes a server name out of a directory name.
func projectName(base string) string {
	var b strings.Builder
	for _, c := range base {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	if s := strings.Trim(b.String(), "-"); s != "" {
		return s
	}
	return "my-tools"
}

type scaffoldFile struct{ name, content string }

func scaffold(name string) []scaffoldFile {
	return []scaffoldFile{
		{"tools.hcl", strings.ReplaceAll(initTools, "NAME", name)},
		{"tools_test.hcl", initTests},
		{"seed.sql", strings.ReplaceAll(initSeed, "NAME", name)},
		{"README.md", strings.ReplaceAll(initReadme, "NAME", name)},
		{".gitignore", ".mcpd/\n"},
	}
}

const initTools = `# NAME: tools served over MCP by mcpd. The language is documented in
# docs/config.md of mcpd's source; mcpd help lists the commands. mcpd
# reloads this file when it changes.

server {
  name         = "NAME"
  instructions = "Notes in a small database (search_notes), a word counter (count_words), a GitHub repository lookup (github_repo) and a greeting (greet)."
}

# A SQLite database, created and filled from seed.sql the first time a tool
# uses it, in the data directory: $MCPD_DATA_DIR when it is set (the mcpd
# container image sets /var/lib/mcpd, a writable volume, since the config
# is mounted read-only), else .mcpd/ beside this file. Delete notes.db to
# start over.
database "notes" {
  driver = "sqlite"
  dsn    = "file:${env("MCPD_DATA_DIR", ".mcpd")}/notes.db"
  seed   = file("seed.sql")
}

tool "search_notes" {
  description = "Search the notes by text in their title or body; newest first."
  annotations {
    read_only = true
  }
  param "text" {
    type        = "string"
    description = "Text the title or body contains, case-insensitive"
    min_length  = 1
    max_length  = 100
  }
  sql {
    database = "notes"
    max_rows = 20
    query    = <<-SQL
      SELECT id, title, body, created
      FROM notes
      WHERE title LIKE '%' || :text || '%' OR body LIKE '%' || :text || '%'
      ORDER BY created DESC, id
    SQL
  }
}

# A local program: the argument goes to its stdin, never through a shell.
# (The mcpd container image ships wc; a tool that runs other programs needs
# an image that has them: deploy/container/Dockerfile.tools in mcpd's source.)
tool "count_words" {
  description = "Count the words of a text."
  annotations {
    read_only  = true
    idempotent = true
  }
  param "text" {
    type        = "string"
    description = "The text whose words to count"
    max_length  = 100000
  }
  shell {
    command = ["wc", "-w"]
    stdin   = args.text
    timeout = "5s"
  }
  result {
    structured = "{words: int(trim(stdout))}"
  }
}

# An HTTP API. Calling it needs the network; its test in tools_test.hcl
# answers from a mock, so ` + "`mcpd test`" + ` runs offline.
http_backend "github" {
  base_url = "https://api.github.com"
  headers = {
    Accept = "application/vnd.github+json"
  }
  timeout = "10s"
}

tool "github_repo" {
  description = "Look up a public GitHub repository: its description, stars and main language."
  annotations {
    read_only  = true
    open_world = true
  }
  param "owner" {
    type        = "string"
    description = "The user or organization, e.g. golang"
    pattern     = "^[A-Za-z0-9-]{1,39}$"
  }
  param "repo" {
    type        = "string"
    description = "The repository name, e.g. go"
    pattern     = "^[A-Za-z0-9._-]{1,100}$"
  }
  http {
    backend = "github"
    method  = "GET"
    path    = "/repos/${args.owner}/${args.repo}"
  }
  result {
    structured = "{name: body.full_name, description: body.description, stars: body.stargazers_count, language: body.language}"
  }
}

# A tool with no backend at all: its result is declared here.
tool "greet" {
  description = "Greet someone by name."
  param "name" {
    type        = "string"
    description = "Who to greet"
    min_length  = 1
    max_length  = 100
  }
  result {
    content "text" {
      text = "Hello, ${args.name}!"
    }
  }
}

resource "readme" {
  uri         = "notes://readme"
  description = "What this project's tools are and how to run them"
  mime_type   = "text/markdown"
  file        = "README.md"
}

prompt "summarize_notes" {
  description = "Ask for a summary of the notes, optionally about one topic."
  argument "topic" {
    description = "Only notes about this topic"
  }
  message {
    role = "user"
    text = "Use search_notes to find the notes about ${coalesce(args.topic, "anything")} and summarize them in three bullet points."
  }
}
`

const initTests = `# Tests of tools.hcl, run with ` + "`mcpd test`" + `. This file is never served.

test "search_notes finds a seeded note" {
  tool          = "search_notes"
  args          = { text = "welcome" }
  text_contains = "This note comes from seed.sql"
}

test "count_words counts words" {
  tool   = "count_words"
  args   = { text = "one two three" }
  assert = "structured.words == 3"
}

test "github_repo shapes the API's answer" {
  tool = "github_repo"
  args = { owner = "golang", repo = "go" }
  mock "github" {
    json = {
      full_name        = "golang/go"
      description      = "The Go programming language"
      stargazers_count = 120000
      language         = "Go"
    }
  }
  text_contains = "golang/go"
}

test "greet greets" {
  tool          = "greet"
  args          = { name = "Ada" }
  text_contains = "Hello, Ada!"
}
`

const initSeed = `-- The notes database. mcpd runs this script once, when the SQLite file has
-- no tables yet. Delete notes.db (in .mcpd/, or $MCPD_DATA_DIR) to start over.

CREATE TABLE notes (
  id      INTEGER PRIMARY KEY,
  title   TEXT    NOT NULL,
  body    TEXT    NOT NULL,
  created TEXT    NOT NULL
);

INSERT INTO notes (title, body, created) VALUES
  ('Welcome to NAME', 'This note comes from seed.sql. Edit it, or point the database block at your own data.', '2026-01-01'),
  ('Tools', 'Each tool in tools.hcl is one block: params, an adapter (sql, shell, http) or a declared result.', '2026-01-02'),
  ('Tests', 'tools_test.hcl calls each tool and checks its answer: run mcpd test.', '2026-01-03');
`

const initReadme = "# NAME\n\n" +
	"MCP tools declared in `tools.hcl` and served by mcpd (`mcpd help` lists its commands;\n" +
	"the config language is in docs/config.md of mcpd's source).\n\n" +
	"| File | What it is |\n|---|---|\n" +
	"| `tools.hcl` | the tools (`search_notes` on SQLite, `count_words` running `wc`, `github_repo` over HTTP, `greet`), a resource (this README) and a prompt |\n" +
	"| `tools_test.hcl` | a test per tool; the HTTP one answers from a mock |\n" +
	"| `seed.sql` | what fills the SQLite database `.mcpd/notes.db` (or `$MCPD_DATA_DIR/notes.db`) on first use |\n\n" +
	"```sh\n" +
	"mcpd validate                      # check the config\n" +
	"mcpd lint                          # a reviewer's advice\n" +
	"mcpd test                          # run tools_test.hcl\n" +
	"mcpd call greet name=Ada           # run one tool\n" +
	"mcpd read notes://readme           # read a resource\n" +
	"mcpd prompt summarize_notes topic=tests\n" +
	"mcpd serve                         # serve on http://127.0.0.1:8080/mcp (holds the terminal)\n" +
	"mcpd client-config --host claude-code   # how to add it to a host\n" +
	"```\n\n" +
	"In mcpd's container image, with this directory as its config (read-only) and the\n" +
	"database in the image's data volume (`MCPD_DATA_DIR=/var/lib/mcpd`):\n\n" +
	"```sh\n" +
	"podman run --rm -p 127.0.0.1:8080:8080 --read-only -v \"$PWD\":/etc/mcpd:ro localhost/mcpd\n" +
	"```\n"
