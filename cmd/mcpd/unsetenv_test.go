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
