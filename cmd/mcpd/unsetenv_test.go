package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unsetSecretsConfig has a tool per place a secret can be read: a backend
// (database "shop": SHOP_DSN), the tool's own block (TOKEN_OF_REPORT), and
// a tool that needs neither. STATE is replaced by the state block, or by
// nothing.
const unsetSecretsConfig = `
server {
  name = "secrets"
  STATE
}

database "shop" {
  driver = "sqlite"
  dsn    = env("SHOP_DSN")
}

database "spare" {
  driver = "sqlite"
  dsn    = env("SPARE_DSN")
}

tool "books" {
  description = "Counts the books."
  sql {
    database = "shop"
    query    = "SELECT 1 AS n"
  }
}

tool "report" {
  description = "Says how long the report token is."
  result {
    content "text" {
      text = "${strlen(env("TOKEN_OF_REPORT"))}"
    }
  }
}

tool "hello" {
  description = "Says hello."
  result {
    content "text" {
      text = "hello"
    }
  }
}
`

// list shows a catalog whose secrets are not set, and does not dial the
// state block's Redis; call runs a tool that needs none of them and refuses
// one that does, naming the variable.
func TestListAndCallWithoutSecrets(t *testing.T) {
	clearEnv(t)
	for _, n := range []string{"SHOP_DSN", "SPARE_DSN", "TOKEN_OF_REPORT"} {
		t.Setenv(n, "")
		os.Unsetenv(n)
	}
	// A Redis that records being dialed: list must not.
	redis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer redis.Close()
	withState := strings.Replace(unsetSecretsConfig, "STATE", `state {
    redis = "redis://`+redis.Addr().String()+`"
  }`, 1)
	dir := configDir(t, map[string]string{"tools.hcl": withState})

	r := runCLI(t, "list", "-c", dir)
	wantList := "tool books()\n    Counts the books.\ntool report()\n    Says how long the report token is.\ntool hello()\n    Says hello.\n"
	if r.code != 0 || r.stdout != wantList || !strings.Contains(r.stderr, "not set: SHOP_DSN, SPARE_DSN, TOKEN_OF_REPORT") {
		t.Errorf("list: %+v\nwant stdout %q", r, wantList)
	}
	if r := runCLI(t, "list", "-c", dir, "--json"); r.code != 0 || !strings.Contains(r.stdout, `"name": "report"`) {
		t.Errorf("list --json: %+v", r)
	}
	// The state's Redis is pinged before Open returns: a dial would be
	// waiting in the accept queue by now.
	redis.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if conn, err := redis.Accept(); err == nil {
		conn.Close()
		t.Error("mcpd list dialed the state block's Redis")
	}

	dir = configDir(t, map[string]string{"tools.hcl": strings.Replace(unsetSecretsConfig, "STATE", "", 1)})
	tools := filepath.Join(dir, "tools.hcl")
	// validate agrees: content that reads an unset variable is not an
	// error (it was "value is unknown").
	if r := runCLI(t, "validate", "-c", dir); r.code != 0 || strings.Contains(r.stderr, ": error:") {
		t.Errorf("validate: %+v", r)
	}
	calls := []struct {
		tool    string
		code    int
		stdout  string
		errText string
	}{
		{"hello", 0, "hello\n", ""},
		{"books", 1, "", `tool "books" needs SHOP_DSN, which is not set (env("SHOP_DSN") at ` + tools + `:9:12 in database "shop"); set it to call the tool`},
		{"report", 1, "", `tool "report" needs TOKEN_OF_REPORT, which is not set (env("TOKEN_OF_REPORT") at ` + tools + `:29:24 in tool "report")`},
	}
	for _, c := range calls {
		r := runCLI(t, "call", "-c", dir, c.tool)
		if r.code != c.code || r.stdout != c.stdout || !strings.Contains(r.stderr, c.errText) {
			t.Errorf("call %s: %+v\nwant exit %d, stdout %q, stderr with %q", c.tool, r, c.code, c.stdout, c.errText)
		}
	}

	// With the variables set, the same calls run.
	t.Setenv("SHOP_DSN", filepath.Join(dir, "shop.db"))
	t.Setenv("TOKEN_OF_REPORT", "abc")
	for tool, want := range map[string]string{"report": "3\n", "books": `"n":1`} {
		if r := runCLI(t, "call", "-c", dir, tool); r.code != 0 || !strings.Contains(r.stdout, want) || r.stderr != "" {
			t.Errorf("call %s with its secret: %+v", tool, r)
		}
	}
}

// unsetSecretsReadConfig has a resource, a resource template and a prompt
// per place a secret can be read: a backend (database "shop": SHOP_DSN),
// the item's own block (TOKEN_OF_REPORT, SIGNATURE), and ones that need
// neither. SERVER is replaced by the server block's contents.
const unsetSecretsReadConfig = `
server {
  name = "secrets"
  SERVER
}

database "shop" {
  driver = "sqlite"
  dsn    = env("SHOP_DSN")
}

resource "readme" {
  uri  = "docs://readme"
  text = "read me"
}

resource "stock" {
  uri = "shop://stock"
  sql {
    database = "shop"
    query    = "SELECT 1 AS n"
  }
}

resource "token" {
  uri  = "secrets://token"
  text = "${strlen(env("TOKEN_OF_REPORT"))}"
}

resource_template "row" {
  uri_template = "shop://rows/{id}"
  sql {
    database = "shop"
    query    = "SELECT :id AS id"
  }
}

resource_template "echo" {
  uri_template = "echo://{word}"
  text         = "said ${args.word}"
}

prompt "greet" {
  message {
    text = "hello"
  }
}

resource "notes" {
  uri  = "docs://notes"
  file = env("NOTES_FILE")
}

prompt "signed" {
  message {
    text = "signed ${env("SIGNATURE")}"
  }
}
`

// read and prompt work on a config whose secrets are not set when what
// they read needs none of them, and refuse, naming the variable and where
// it is read, what needs one: its own block, a backend it uses, or the
// server block (which every read may depend on).
func TestReadAndPromptWithoutSecrets(t *testing.T) {
	clearEnv(t)
	for _, n := range []string{"SHOP_DSN", "TOKEN_OF_REPORT", "SIGNATURE", "STATE_URL", "NOTES_FILE"} {
		t.Setenv(n, "")
		os.Unsetenv(n)
	}
	dir := configDir(t, map[string]string{"tools.hcl": strings.Replace(unsetSecretsReadConfig, "SERVER", "", 1)})
	file := filepath.Join(dir, "tools.hcl")
	// validate and list agree: a file path that reads an unset variable
	// is not an error (the snapshot was not built, and no error said why).
	if r := runCLI(t, "validate", "-c", dir); r.code != 0 || strings.Contains(r.stderr, ": error:") {
		t.Errorf("validate: %+v", r)
	}
	if r := runCLI(t, "list", "-c", dir); r.code != 0 || !strings.Contains(r.stdout, "docs://notes") {
		t.Errorf("list: %+v", r)
	}
	cases := []struct {
		args    []string
		code    int
		stdout  string
		errText string
	}{
		{[]string{"read", "docs://readme"}, 0, "read me\n", ""},
		{[]string{"read", "echo://hi"}, 0, "said hi\n", ""},
		{[]string{"prompt", "greet"}, 0, "[user]\nhello\n", ""},
		{[]string{"read", "shop://stock"}, 1, "", `resource "stock" needs SHOP_DSN, which is not set (env("SHOP_DSN") at ` + file + `:9:12 in database "shop"); set it to read the resource`},
		{[]string{"read", "shop://rows/7"}, 1, "", `resource_template "row" needs SHOP_DSN, which is not set (env("SHOP_DSN") at ` + file + `:9:12 in database "shop"); set it to read the resource`},
		{[]string{"read", "secrets://token"}, 1, "", `resource "token" needs TOKEN_OF_REPORT, which is not set (env("TOKEN_OF_REPORT") at ` + file + `:27:20 in resource "token")`},
		{[]string{"prompt", "signed"}, 1, "", `prompt "signed" needs SIGNATURE, which is not set (env("SIGNATURE") at ` + file + `:56:22 in prompt "signed"); set it to get the prompt`},
		{[]string{"read", "docs://notes"}, 1, "", `resource "notes" needs NOTES_FILE, which is not set (env("NOTES_FILE") at ` + file + `:51:10 in resource "notes")`},
		// Not found is still not found, and lists what there is.
		{[]string{"read", "docs://nothing"}, 1, "", `no resource "docs://nothing"; the config declares: docs://readme`},
		{[]string{"prompt", "nothing"}, 1, "", `no prompt "nothing"; the config declares: greet, signed`},
	}
	for _, c := range cases {
		r := runCLI(t, append(c.args, "-c", dir)...)
		if r.code != c.code || r.stdout != c.stdout || !strings.Contains(r.stderr, c.errText) {
			t.Errorf("%v: %+v\nwant exit %d, stdout %q, stderr with %q", c.args, r, c.code, c.stdout, c.errText)
		}
		// Only the variables what is read needs are named.
		for _, n := range []string{"SHOP_DSN", "TOKEN_OF_REPORT", "SIGNATURE", "NOTES_FILE"} {
			if !strings.Contains(c.errText, n) && strings.Contains(r.stderr, n) {
				t.Errorf("%v names %s, which it does not need: %q", c.args, n, r.stderr)
			}
		}
	}

	// A variable the server block reads may concern every read.
	dir = configDir(t, map[string]string{"tools.hcl": strings.Replace(unsetSecretsReadConfig, "SERVER", `state {
    redis = env("STATE_URL")
  }`, 1)})
	file = filepath.Join(dir, "tools.hcl")
	for _, args := range [][]string{{"read", "docs://readme"}, {"prompt", "greet"}} {
		r := runCLI(t, append(args, "-c", dir)...)
		if want := `needs STATE_URL, which is not set (env("STATE_URL") at ` + file + `:5:13 in server)`; r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, want) {
			t.Errorf("%v with the state's URL unset: %+v\nwant stderr with %q", args, r, want)
		}
	}

	// With the variables set, the same reads run.
	t.Setenv("SHOP_DSN", filepath.Join(dir, "shop.db"))
	t.Setenv("TOKEN_OF_REPORT", "abc")
	t.Setenv("SIGNATURE", "ann")
	notes := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(notes, []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOTES_FILE", notes)
	dir = configDir(t, map[string]string{"tools.hcl": strings.Replace(unsetSecretsReadConfig, "SERVER", "", 1)})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"read", "secrets://token"}, "3\n"},
		{[]string{"read", "shop://stock"}, `"n":1`},
		{[]string{"read", "shop://rows/7"}, `"id":"7"`},
		{[]string{"prompt", "signed"}, "signed ann"},
		{[]string{"read", "docs://notes"}, "# notes\n"},
	} {
		if r := runCLI(t, append(c.args, "-c", dir)...); r.code != 0 || !strings.Contains(r.stdout, c.want) || r.stderr != "" {
			t.Errorf("%v with its secret: %+v\nwant stdout with %q", c.args, r, c.want)
		}
	}
}
