package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The caller's identity reaching the backend, end to end: the real binary
// over HTTP with API keys whose attributes are the claims, go-sdk clients,
// and real PostgreSQL, MariaDB and processes.

// keyClient connects to endpoint with an API key.
func keyClient(t *testing.T, endpoint, key string) *mcp.ClientSession {
	t.Helper()
	cs, err := connectWith(t, endpoint, &http.Client{Transport: keyTransport{"X-Api-Key", key, http.DefaultTransport}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// callRows calls a tool whose text is the JSON of its rows.
func callRows(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) ([]map[string]any, string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, "", err
	}
	text := textOf(res)
	if res.IsError {
		return nil, text, nil
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(text), &rows); err != nil {
		return nil, text, fmt.Errorf("%s: not rows: %v: %s", tool, err, text)
	}
	return rows, "", nil
}

// hammer runs calls calls of f on workers goroutines; f gets the call's
// number and reports a failure as an error.
func hammer(t *testing.T, calls, workers int, f func(i int) error) {
	t.Helper()
	var next atomic.Int64
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(calls); i = next.Add(1) {
				if err := f(int(i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d calls failed; the first: %v", len(errs), calls, errs[0])
	}
}

// examples/tenant-rls served as it is, on its schema.sql: two tenants
// calling list_orders concurrently each see only their orders; the auditor
// role sees all; add_order writes the caller's tenant. Then the same
// config with two more keys: a role outside the allow-list and a key
// without claims are refused with tool errors.
func TestTenantRLSExample(t *testing.T) {
	dsn := os.Getenv("MCPD_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("MCPD_TEST_POSTGRES_DSN not set")
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	schema := fmt.Sprintf("mcpd_tenant_rls_%08x", rand.Uint32())
	schemaSQL, err := os.ReadFile("../../examples/tenant-rls/schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	ctx := bounded(t)
	conn, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE")
		// The roles are the example's, cluster-wide: dropped with what
		// they were granted here.
		admin.Exec("DROP OWNED BY orders_member, orders_auditor, orders_mcpd")
		admin.Exec("DROP ROLE IF EXISTS orders_member, orders_auditor, orders_mcpd")
	})
	for _, q := range []string{"CREATE SCHEMA " + schema, "SET search_path TO " + schema, string(schemaSQL)} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	conn.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("orders_mcpd")
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	env := []string{"DATABASE_URL=" + u.String(), "ACME_API_KEY=acme-key", "GLOBEX_API_KEY=globex-key", "AUDITOR_API_KEY=auditor-key"}

	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", "../../examples/tenant-rls")
	cmd.Env = append(cmd.Env, env...)
	endpoint := startHTTP(t, cmd)

	want := map[string]int{"acme": 3, "globex": 2}
	t.Run("tenants concurrently", func(t *testing.T) {
		// 8 sessions per tenant, 16 calls at once, 2000 calls.
		var sessions []*mcp.ClientSession
		var tenants []string
		for i := range 16 {
			tenant := []string{"acme", "globex"}[i%2]
			sessions = append(sessions, keyClient(t, endpoint, tenant+"-key"))
			tenants = append(tenants, tenant)
		}
		var crossRows atomic.Int64
		hammer(t, 2000, 16, func(i int) error {
			k := i % len(sessions)
			rows, toolErr, err := callRows(ctx, sessions[k], "list_orders", nil)
			switch {
			case err != nil:
				return err
			case toolErr != "":
				return fmt.Errorf("tool error: %s", toolErr)
			}
			for _, r := range rows {
				if r["tenant"] != tenants[k] {
					crossRows.Add(1)
				}
			}
			if len(rows) != want[tenants[k]] {
				return fmt.Errorf("%s sees %d rows: %v", tenants[k], len(rows), rows)
			}
			return nil
		})
		if n := crossRows.Load(); n != 0 {
			t.Fatalf("%d cross-tenant rows", n)
		}
	})

	t.Run("role switch", func(t *testing.T) {
		for key, wantRole := range map[string]string{"acme-key": "orders_member", "auditor-key": "orders_auditor"} {
			rows, toolErr, err := callRows(ctx, keyClient(t, endpoint, key), "whoami", nil)
			if err != nil || toolErr != "" || len(rows) != 1 || rows[0]["db_role"] != wantRole {
				t.Fatalf("%s: whoami %v %q %v", key, rows, toolErr, err)
			}
		}
		rows, toolErr, err := callRows(ctx, keyClient(t, endpoint, "auditor-key"), "list_orders", nil)
		if err != nil || toolErr != "" || len(rows) != 5 {
			t.Fatalf("the auditor sees %d rows (%q %v), want all 5", len(rows), toolErr, err)
		}
	})

	t.Run("write as the caller's tenant", func(t *testing.T) {
		globex := keyClient(t, endpoint, "globex-key")
		rows, toolErr, err := callRows(ctx, globex, "add_order", map[string]any{"item": "Doomsday device", "total": 1})
		if err != nil || toolErr != "" || len(rows) != 1 || rows[0]["tenant"] != "globex" {
			t.Fatalf("add_order: %v %q %v", rows, toolErr, err)
		}
		var n int
		if err := admin.QueryRow("SELECT count(*) FROM " + schema + ".orders WHERE tenant = 'globex'").Scan(&n); err != nil || n != 3 {
			t.Fatalf("globex has %d orders after the insert (%v), want 3", n, err)
		}
		if rows, _, _ := callRows(ctx, keyClient(t, endpoint, "acme-key"), "list_orders", nil); len(rows) != 3 {
			t.Fatalf("acme sees %d rows after globex's insert", len(rows))
		}
	})

	t.Run("refused", func(t *testing.T) {
		src, err := os.ReadFile("../../examples/tenant-rls/tools.hcl")
		if err != nil {
			t.Fatal(err)
		}
		extra := `auth {
  header = "X-Api-Key"

  api_key "intruder" {
    value      = env("INTRUDER_API_KEY")
    attributes = { tenant = "acme", db_role = "postgres" }
  }
  api_key "anonymous" {
    value      = env("ANON_API_KEY")
    attributes = { team = "x" }
  }
  api_key "sneaky" {
    value      = env("SNEAKY_API_KEY")
    attributes = { tenant = "acme' OR true --", db_role = "orders_member" }
  }
`
		text := strings.Replace(string(src), "auth {\n  header = \"X-Api-Key\"\n", extra, 1)
		dir := configDir(t, map[string]string{"tools.hcl": text})
		cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir)
		cmd.Env = append(cmd.Env, env...)
		cmd.Env = append(cmd.Env, "INTRUDER_API_KEY=intruder-key", "ANON_API_KEY=anon-key", "SNEAKY_API_KEY=sneaky-key")
		endpoint := startHTTP(t, cmd)
		for key, want := range map[string]string{
			"intruder-key": `database "orders" runs each call as its caller's role: the caller's claim db_role is not one of the allowed values`,
			"anon-key":     "needs an authenticated caller with claim db_role",
			"sneaky-key":   "the caller's claim tenant does not match the pattern",
		} {
			_, toolErr, err := callRows(ctx, keyClient(t, endpoint, key), "list_orders", nil)
			if err != nil || !strings.Contains(toolErr, want) {
				t.Errorf("%s: tool error %q (%v), want %q", key, toolErr, err, want)
			}
		}
		// The acme key still works on this server.
		if rows, toolErr, err := callRows(ctx, keyClient(t, endpoint, "acme-key"), "list_orders", nil); err != nil || toolErr != "" || len(rows) != 3 {
			t.Fatalf("acme: %d rows %q %v", len(rows), toolErr, err)
		}
	})
}

// MariaDB: the tenant as a session variable, read by a view through a
// function, on a pool of one connection shared with a tool that has no
// identity and reads the variable: under interleaved concurrent calls of
// both tenants, no call sees another tenant's rows and the tool without
// identity never sees a value.
func TestMySQLIdentityE2E(t *testing.T) {
	dsn := os.Getenv("MCPD_TEST_MYSQL_DSN")
	if dsn == "" {
		t.Skip("MCPD_TEST_MYSQL_DSN not set")
	}
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	p := fmt.Sprintf("mcpd_id_%08x", rand.Uint32())
	t.Cleanup(func() {
		admin.Exec("DROP VIEW IF EXISTS " + p + "_mine")
		admin.Exec("DROP FUNCTION IF EXISTS " + p + "_tenant")
		admin.Exec("DROP TABLE IF EXISTS " + p)
	})
	for _, q := range []string{
		"CREATE TABLE " + p + " (id INT AUTO_INCREMENT PRIMARY KEY, tenant VARCHAR(32) NOT NULL, item VARCHAR(64) NOT NULL)",
		"INSERT INTO " + p + " (tenant, item) VALUES ('acme','Anvil'),('acme','Rocket skates'),('acme','Giant magnet'),('globex','Hammock'),('globex','Flamethrower')",
		// A view cannot read a user variable; a function it calls can.
		"CREATE FUNCTION " + p + "_tenant() RETURNS VARCHAR(64) DETERMINISTIC NO SQL RETURN @app_tenant",
		"CREATE VIEW " + p + "_mine AS SELECT id, tenant, item FROM " + p + " WHERE tenant = " + p + "_tenant()",
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	config := fmt.Sprintf(`
auth {
  header = "X-Api-Key"
  api_key "acme" {
    value      = "acme-key"
    attributes = { tenant = "acme" }
  }
  api_key "globex" {
    value      = "globex-key"
    attributes = { tenant = "globex" }
  }
}

database "shop" {
  driver         = "mysql"
  dsn            = %q
  max_open_conns = 1
}

tool "my_orders" {
  description = "The caller's orders."
  sql {
    database = "shop"
    query    = "SELECT id, tenant, item FROM %s_mine ORDER BY id"
    identity {
      setting "tenant" {
        from_caller = "claims.tenant"
        enum        = ["acme", "globex"]
      }
    }
  }
}

tool "peek" {
  description = "What the session variable holds for a tool without identity."
  sql {
    database = "shop"
    query    = "SELECT @app_tenant AS tenant"
  }
}
`, dsn, p)
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", configDir(t, map[string]string{"tools.hcl": config}))
	endpoint := startHTTP(t, cmd)
	ctx := bounded(t)
	sessions := map[string]*mcp.ClientSession{"acme": keyClient(t, endpoint, "acme-key"), "globex": keyClient(t, endpoint, "globex-key")}
	want := map[string]int{"acme": 3, "globex": 2}
	var cross, leftovers atomic.Int64
	hammer(t, 2000, 16, func(i int) error {
		tenant := []string{"acme", "globex"}[i%2]
		if i%3 == 0 {
			rows, toolErr, err := callRows(ctx, sessions[tenant], "peek", nil)
			if err != nil || toolErr != "" || len(rows) != 1 {
				return fmt.Errorf("peek: %v %q %v", rows, toolErr, err)
			}
			if rows[0]["tenant"] != nil {
				leftovers.Add(1)
			}
			return nil
		}
		rows, toolErr, err := callRows(ctx, sessions[tenant], "my_orders", nil)
		if err != nil || toolErr != "" {
			return fmt.Errorf("my_orders: %q %v", toolErr, err)
		}
		for _, r := range rows {
			if r["tenant"] != tenant {
				cross.Add(1)
			}
		}
		if len(rows) != want[tenant] {
			return fmt.Errorf("%s sees %d rows", tenant, len(rows))
		}
		return nil
	})
	if cross.Load() != 0 || leftovers.Load() != 0 {
		t.Fatalf("%d cross-tenant rows, %d calls without identity saw a tenant", cross.Load(), leftovers.Load())
	}
}

// Shell: a claim reaches the program as an environment variable, checked
// like an argument (the param's pattern), never in its argv.
func TestShellClaimEnvE2E(t *testing.T) {
	script := filepath.Join(t.TempDir(), "show.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf 'tenant=%s argc=%d' \"$MCPD_TENANT\" \"$#\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`
auth {
  header = "X-Api-Key"
  api_key "acme" {
    value      = "acme-key"
    attributes = { tenant = "acme" }
  }
  api_key "odd" {
    value      = "odd-key"
    attributes = { tenant = "acme; rm -rf /" }
  }
  api_key "none" {
    value = "none-key"
  }
}

tool "show_tenant" {
  description = "Shows the caller's tenant, as the program sees it."
  param "tenant" {
    type        = "string"
    pattern     = "^[a-z0-9-]{1,63}$"
    from_caller = "claims.tenant"
  }
  shell {
    command = [%q]
    env     = { MCPD_TENANT = args.tenant }
  }
}
`, script)
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", configDir(t, map[string]string{"tools.hcl": config}))
	endpoint := startHTTP(t, cmd)
	ctx := bounded(t)
	for key, want := range map[string]struct {
		text    string
		isError bool
	}{
		"acme-key": {"tenant=acme argc=0", false},
		"odd-key":  {"must match the pattern", true},
		"none-key": {"needs an authenticated caller with claim tenant", true},
	} {
		res, err := keyClient(t, endpoint, key).CallTool(ctx, &mcp.CallToolParams{Name: "show_tenant"})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError != want.isError || !strings.Contains(textOf(res), want.text) {
			t.Errorf("%s: %q (isError %v), want %q", key, textOf(res), res.IsError, want.text)
		}
	}
	// The model cannot set it.
	res, err := keyClient(t, endpoint, "acme-key").CallTool(ctx, &mcp.CallToolParams{Name: "show_tenant", Arguments: map[string]any{"tenant": "globex"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "set from the authenticated caller") {
		t.Fatalf("a tenant argument: %v %v", textOf(res), err)
	}
}

// What can be checked at load time is: identity without an auth block is
// an error at its from_caller, with file:line:col; a claim that no API key
// declares is a warning, for identity settings and caller-bound params
// alike; so is a caller-bound param without an auth block.
func TestIdentityLoadChecks(t *testing.T) {
	clearEnv(t)
	db := `database "app" {
  driver = "postgres"
  dsn    = "postgres://app@127.0.0.1:5432/app"
  identity {
    setting "tenant" {
      from_caller = "claims.tenant"
    }
  }
}
`
	tool := `tool "t" {
  description = "Lists."
  param "team" {
    type        = "string"
    from_caller = "claims.team"
  }
  sql {
    database = "app"
    query    = "SELECT :team AS team"
  }
}
`
	keys := `auth {
  api_key "k" {
    value      = "a-key-for-tests"
    attributes = { tenant = "acme" }
  }
}
`
	for _, c := range []struct {
		name, src string
		code      int
		want      []string
	}{
		{"no auth", db + tool, 1, []string{
			"tools.hcl:6:21: error: Caller identity without authentication",
			"tools.hcl:14:19: warning: Caller value no call can have",
		}},
		// A MySQL tool with an identity may assign no user variable, in
		// whatever spelling (TestMySQLIdentityAssignments has them all).
		{"mysql user variable", `database "my" {
  driver = "mysql"
  dsn    = "app@tcp(127.0.0.1:3306)/app"
  identity {
    setting "tenant" {
      from_caller = "claims.tenant"
    }
  }
}
tool "t" {
  description = "Lists."
  param "q" {
    type = "string"
  }
  sql {
    database = "my"
    query    = "SELECT :q INTO @'APP_TENANT'"
  }
}
` + keys, 1, []string{
			"tools.hcl:17:27: error: User variable assigned in a tool with an identity",
		}},
		{"api keys without the claim", db + tool + keys, 0, []string{
			`tools.hcl:14:19: warning: Caller value no call can have: param "team": The auth block authenticates callers with API keys only, and no key's attributes declare "team"`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := configDir(t, map[string]string{"tools.hcl": c.src})
			r := runCLI(t, "validate", "-c", dir)
			out := r.stdout + r.stderr
			if r.code != c.code {
				t.Errorf("exit %d, want %d:\n%s", r.code, c.code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, out)
				}
			}
		})
	}
}

// With OAuth, the values come from the verified token's claims: nested
// ones, numbers, and a role from the allow-list; a token whose role claim
// is outside it is refused.
func TestPostgresIdentityOAuth(t *testing.T) {
	dsn := os.Getenv("MCPD_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("MCPD_TEST_POSTGRES_DSN not set")
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	role := fmt.Sprintf("mcpd_oauth_%08x", rand.Uint32())
	if _, err := admin.Exec("CREATE ROLE " + role + " NOLOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec("DROP ROLE IF EXISTS " + role) })

	key, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	}))
	t.Cleanup(jwks.Close)
	const resource = "http://127.0.0.1/mcp"
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	mint := func(sub string, extra map[string]any) string {
		now := time.Now()
		tok, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: jwks.URL, Subject: sub, Audience: jwt.Audience{resource},
			Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now)}).Claims(extra).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	config := fmt.Sprintf(`
auth {
  resource = %q
  oauth {
    issuer   = %q
    jwks_url = %q
  }
}

database "app" {
  driver = "postgres"
  dsn    = %q
  identity {
    role {
      from_caller = "claims.db_role"
      enum        = [%q]
    }
    setting "tenant" {
      from_caller = "claims.org.tenant"
      pattern     = "^[a-z]+$"
    }
    setting "level" {
      from_caller = "claims.level"
      pattern     = "^[0-9]+$"
    }
    setting "user" {
      from_caller = "name"
    }
  }
}

tool "whoami" {
  description = "The database role and settings of the call."
  sql {
    database = "app"
    query    = "SELECT current_user AS who, current_setting('app.tenant', true) AS tenant, current_setting('app.level', true) AS level, current_setting('app.user', true) AS usr"
  }
}
`, resource, jwks.URL, jwks.URL, dsn, role)
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", configDir(t, map[string]string{"tools.hcl": config}))
	endpoint := startHTTP(t, cmd)
	ctx := bounded(t)
	bearer := func(tok string) *mcp.ClientSession {
		cs, err := connectWith(t, endpoint, &http.Client{Transport: keyTransport{"Authorization", "Bearer " + tok, http.DefaultTransport}})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	good := bearer(mint("alice", map[string]any{"db_role": role, "org": map[string]any{"tenant": "acme"}, "level": 3}))
	rows, toolErr, err := callRows(ctx, good, "whoami", nil)
	if err != nil || toolErr != "" || len(rows) != 1 {
		t.Fatalf("whoami: %v %q %v", rows, toolErr, err)
	}
	if r := rows[0]; r["who"] != role || r["tenant"] != "acme" || r["level"] != "3" || r["usr"] != "alice" {
		t.Fatalf("whoami: %v", r)
	}
	bad := bearer(mint("mallory", map[string]any{"db_role": "postgres", "org": map[string]any{"tenant": "acme"}, "level": 3}))
	if _, toolErr, err := callRows(ctx, bad, "whoami", nil); err != nil || !strings.Contains(toolErr, "claim db_role is not one of the allowed values") {
		t.Fatalf("a role outside the allow-list: %q %v", toolErr, err)
	}
}
