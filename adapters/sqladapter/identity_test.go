package sqladapter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/principal"
)

// openCallers: an auth block whose callers may carry any claim (OAuth).
var openCallers = &adapter.AuthInfo{OAuth: true, OpenClaims: true}

// asCaller is ctx carrying a verified caller with claims.
func asCaller(ctx context.Context, name string, claims map[string]any) context.Context {
	return principal.NewContext(ctx, &principal.Principal{Name: name, Method: "api_key", Claims: claims})
}

// The load-time checks of identity blocks, each with the diagnostic it must
// give.
func TestIdentityConfig(t *testing.T) {
	pg := `database "main" {
  driver = "postgres"
  dsn    = "postgres://u@127.0.0.1:5432/db"
%s
}
sql {
  database = "main"
  query    = "SELECT 1"
%s
}
`
	my := strings.Replace(pg, `driver = "postgres"
  dsn    = "postgres://u@127.0.0.1:5432/db"`, `driver = "mysql"
  dsn    = "u@tcp(127.0.0.1:3306)/db"`, 1)
	lite := strings.Replace(pg, `driver = "postgres"
  dsn    = "postgres://u@127.0.0.1:5432/db"`, `driver = "sqlite"
  dsn    = "file:x.db"`, 1)
	tenant := `identity {
  setting "tenant" { from_caller = "claims.tenant" }
}`
	keys := &adapter.AuthInfo{APIKeys: true, Claims: map[string]bool{"tenant": true, "org": true, "org.id": true}}
	cases := []struct {
		name      string
		src       string
		callers   *adapter.AuthInfo
		err, warn string // "" for none
	}{
		{"postgres database", fmt.Sprintf(pg, tenant, ""), openCallers, "", ""},
		{"postgres tool", fmt.Sprintf(pg, "", tenant), openCallers, "", ""},
		{"mysql", fmt.Sprintf(my, tenant, ""), openCallers, "", ""},
		{"role", fmt.Sprintf(pg, `identity {
  role {
    from_caller = "claims.db_role"
    enum        = ["reader", "auditor"]
  }
}`, ""), openCallers, "", ""},
		{"no auth block", fmt.Sprintf(pg, tenant, ""), nil, "the config has no auth block", ""},
		{"no auth block, tool", fmt.Sprintf(pg, "", tenant), nil, "the config has no auth block", ""},
		{"sqlite", fmt.Sprintf(lite, tenant, ""), openCallers, "SQLite has no roles and no session variables", ""},
		{"role without enum", fmt.Sprintf(pg, `identity {
  role { from_caller = "claims.db_role" }
}`, ""), openCallers, "must list the roles a caller may become", ""},
		{"role on mysql", fmt.Sprintf(my, `identity {
  role {
    from_caller = "claims.db_role"
    enum        = ["r"]
  }
}`, ""), openCallers, "A role switch is supported on PostgreSQL", ""},
		{"bad setting name", fmt.Sprintf(pg, `identity {
  setting "Tenant-ID" { from_caller = "claims.tenant" }
}`, ""), openCallers, "Invalid setting name", ""},
		{"duplicate setting", fmt.Sprintf(pg, `identity {
  setting "tenant" { from_caller = "claims.tenant" }
  setting "tenant" { from_caller = "claims.org" }
}`, ""), openCallers, "Duplicate setting", ""},
		{"bad path", fmt.Sprintf(pg, `identity {
  setting "tenant" { from_caller = "tenant" }
}`, ""), openCallers, "is not a caller attribute", ""},
		{"bad pattern", fmt.Sprintf(pg, `identity {
  setting "tenant" {
    from_caller = "claims.tenant"
    pattern     = "("
  }
}`, ""), openCallers, "Invalid pattern", ""},
		{"path from args", fmt.Sprintf(pg, `identity {
  setting "tenant" { from_caller = args.x }
}`, ""), openCallers, "Value must be known at load time", ""},
		{"two identity blocks", fmt.Sprintf(pg, tenant+"\n"+tenant, ""), openCallers, "Duplicate identity block", ""},
		{"api keys declare the claim", fmt.Sprintf(pg, tenant, ""), keys, "", ""},
		{"nested claim", fmt.Sprintf(pg, `identity {
  setting "org" { from_caller = "claims.org.id" }
}`, ""), keys, "", ""},
		{"api keys lack the claim", fmt.Sprintf(pg, `identity {
  setting "region" { from_caller = "claims.region" }
}`, ""), keys, "", `no key's attributes declare "region" (declared: org, org.id, tenant)`},
		{"empty", fmt.Sprintf(pg, "identity {}", ""), openCallers, "", "changes nothing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, diags := adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: c.src, Auth: c.callers, Dir: t.TempDir()})
			if c.err == "" && diags.HasErrors() {
				t.Fatalf("unexpected errors: %s", diags.Error())
			}
			if c.err != "" {
				if ok, all := adaptertest.DiagContains(diags, c.err); !ok {
					t.Fatalf("want an error containing %q, got: %s", c.err, all)
				}
				for _, d := range diags {
					if d.Severity == hcl.DiagError && (d.Subject == nil || d.Subject.Start.Line == 0) {
						t.Errorf("diagnostic without a position: %s", d.Summary)
					}
				}
			}
			warned := false
			for _, d := range diags {
				if d.Severity == hcl.DiagWarning && strings.Contains(d.Detail, c.warn) {
					warned = true
				}
			}
			if c.warn != "" && !warned {
				t.Fatalf("want a warning containing %q, got: %s", c.warn, diags.Error())
			}
		})
	}
}

// Caller values are checked as arguments are, and refused without a caller.
func TestCallerValueRead(t *testing.T) {
	src := `database "main" {
  driver = "postgres"
  dsn    = "postgres://u@127.0.0.1:1/db"
  identity {
    setting "tenant" {
      from_caller = "claims.tenant"
      pattern     = "^[a-z]+$"
      max_length  = 8
    }
  }
}
sql {
  database = "main"
  query    = "SELECT 1"
}
`
	h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Auth: openCallers})
	id := h.(*handler).identity
	cases := []struct {
		claims map[string]any
		none   bool
		want   string // the value, or a part of the error
		ok     bool
	}{
		{claims: map[string]any{"tenant": "acme"}, want: "acme", ok: true},
		{none: true, want: "the local user"},
		{claims: map[string]any{}, want: "needs an authenticated caller with claim tenant"},
		{claims: map[string]any{"tenant": "ACME"}, want: "does not match the pattern"},
		{claims: map[string]any{"tenant": "abcdefghij"}, want: "longer than 8 characters"},
		{claims: map[string]any{"tenant": "a\x00b"}, want: "NUL"},
		{claims: map[string]any{"tenant": []any{"a"}}, want: "not a single value"},
	}
	for _, c := range cases {
		ctx := context.Background()
		if !c.none {
			ctx = asCaller(ctx, "x", c.claims)
		}
		s, err := id.read(ctx, "main")
		switch {
		case c.ok && err != nil:
			t.Errorf("%v: %v", c.claims, err)
		case c.ok && s.values[0] != c.want:
			t.Errorf("%v: value %v", c.claims, s.values[0])
		case !c.ok && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want %q", c.claims, err, c.want)
		case !c.ok && strings.Contains(err.Error(), "ACME"):
			t.Errorf("the error repeats the claim's value: %v", err)
		}
	}
}

// pgRLS is a schema with row-level security for two tenants, and the
// roles of the test: app (the DSN's login user, not a superuser, so that
// the policies apply to it), reader and auditor (roles app may become; the
// auditor sees every tenant) and other (app may become it, but the config
// does not allow it).
type pgRLS struct {
	schema, app, reader, auditor, other string
	dsn                                 string // as app
}

func setupPGRLS(t testing.TB, db *testDB) *pgRLS {
	t.Helper()
	p := fmt.Sprintf("mcpd_rls_%08x", rand.Uint32())
	r := &pgRLS{schema: p, app: p + "_app", reader: p + "_reader", auditor: p + "_auditor", other: p + "_other"}
	u, err := url.Parse(db.dsn)
	if err != nil || u.Scheme == "" {
		t.Skipf("%s is not a URL: the test needs to change its user", envPostgres)
	}
	u.User = url.User(r.app)
	r.dsn = u.String()
	t.Cleanup(func() {
		db.raw.Exec("DROP SCHEMA IF EXISTS " + p + " CASCADE")
		for _, role := range []string{r.app, r.reader, r.auditor, r.other} {
			db.raw.Exec("DROP OWNED BY " + role)
			db.raw.Exec("DROP ROLE IF EXISTS " + role)
		}
	})
	for _, q := range []string{
		"CREATE ROLE " + r.app + " LOGIN NOINHERIT", // its own rights only, until it switches role
		"CREATE ROLE " + r.reader + " NOLOGIN",
		"CREATE ROLE " + r.auditor + " NOLOGIN",
		"CREATE ROLE " + r.other + " NOLOGIN",
		fmt.Sprintf("GRANT %s, %s, %s TO %s", r.reader, r.auditor, r.other, r.app),
		"CREATE SCHEMA " + p,
		"CREATE TABLE " + p + ".orders (id serial PRIMARY KEY, tenant text NOT NULL, item text NOT NULL)",
		"INSERT INTO " + p + ".orders (tenant, item) VALUES ('a','a1'),('a','a2'),('a','a3'),('b','b1'),('b','b2')",
		"ALTER TABLE " + p + ".orders ENABLE ROW LEVEL SECURITY",
		"CREATE POLICY tenant ON " + p + ".orders USING (tenant = current_setting('app.tenant', true)) WITH CHECK (tenant = current_setting('app.tenant', true))",
		"CREATE POLICY audit ON " + p + ".orders FOR SELECT TO " + r.auditor + " USING (true)",
		fmt.Sprintf("GRANT USAGE ON SCHEMA %s TO %s, %s, %s, %s", p, r.app, r.reader, r.auditor, r.other),
		fmt.Sprintf("GRANT SELECT, INSERT ON %s.orders TO %s, %s, %s, %s", p, r.app, r.reader, r.auditor, r.other),
		fmt.Sprintf("GRANT USAGE ON SEQUENCE %s.orders_id_seq TO %s, %s", p, r.app, r.reader),
	} {
		db.exec(t, q)
	}
	return r
}

// compile compiles a sql block on `database "main"` (as app) with the
// database block's extra text.
func (r *pgRLS) compile(t testing.TB, dbExtra, sqlBody string) adapter.Handler {
	t.Helper()
	src := fmt.Sprintf("database \"main\" {\n  driver = \"postgres\"\n  dsn = %s\n%s\n}\nsql {\n  database = \"main\"\n%s\n}\n", hclString(r.dsn), dbExtra, sqlBody)
	return adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Auth: openCallers})
}

// tenantsOf is the tenants of a result's rows.
func tenantsOf(t testing.TB, out *adapter.Output) []string {
	t.Helper()
	var ts []string
	for _, r := range rows(t, out) {
		ts = append(ts, fmt.Sprint(r["tenant"]))
	}
	return ts
}

func TestPostgresIdentity(t *testing.T) {
	db := openTestDB(t, "postgres")
	r := setupPGRLS(t, db)
	identity := fmt.Sprintf(`  max_open_conns = 4
  identity {
    role {
      from_caller = "claims.db_role"
      enum        = [%q, %q]
    }
    setting "tenant" {
      from_caller = "claims.tenant"
      pattern     = "^[a-z]+$"
    }
  }`, r.reader, r.auditor)
	list := r.compile(t, identity, fmt.Sprintf(`  query = "SELECT tenant, item, current_user AS who FROM %s.orders ORDER BY id"`, r.schema))
	call := func(ctx context.Context, h adapter.Handler) (*adapter.Output, error) {
		return adaptertest.Call(ctx, h, nil, nil)
	}
	tenantA := asCaller(context.Background(), "alice", map[string]any{"tenant": "a", "db_role": r.reader})
	tenantB := asCaller(context.Background(), "bob", map[string]any{"tenant": "b", "db_role": r.reader})

	t.Run("role switch", func(t *testing.T) {
		out, err := call(tenantA, list)
		if err != nil {
			t.Fatal(err)
		}
		rs := rows(t, out)
		if len(rs) != 3 || rs[0]["who"] != r.reader {
			t.Fatalf("tenant a as %s: %v", r.reader, rs)
		}
		audit := asCaller(context.Background(), "carol", map[string]any{"tenant": "a", "db_role": r.auditor})
		if out, err = call(audit, list); err != nil {
			t.Fatal(err)
		}
		if ts := tenantsOf(t, out); len(ts) != 5 {
			t.Fatalf("the auditor sees %v, want every row", ts)
		}
	})

	// The span shows the role taken and the settings' names, never their
	// values.
	t.Run("span attributes", func(t *testing.T) {
		got := map[string]any{}
		ctx := adapter.WithAnnotate(tenantA, func(attrs ...adapter.Attribute) {
			for _, a := range attrs {
				got[a.Key] = a.Value
			}
		})
		if _, err := call(ctx, list); err != nil {
			t.Fatal(err)
		}
		if got["mcpd.db.role"] != r.reader || got["mcpd.db.session_settings"] != "app.tenant" {
			t.Fatalf("span attributes %v", got)
		}
		for k, v := range got {
			if v == "a" {
				t.Errorf("attribute %s holds the tenant's value", k)
			}
		}
		remote := map[string]any{}
		for _, a := range list.(adapter.Remote).RemoteAttributes() {
			remote[a.Key] = a.Value
		}
		if remote["mcpd.db.identity"] != true {
			t.Errorf("remote attributes %v", remote)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct {
			ctx  context.Context
			want string
		}{
			{asCaller(context.Background(), "mallory", map[string]any{"tenant": "a", "db_role": r.other}), "claim db_role is not one of the allowed values"},
			{asCaller(context.Background(), "mallory", map[string]any{"tenant": "a", "db_role": "postgres"}), "claim db_role is not one of the allowed values"},
			{asCaller(context.Background(), "mallory", map[string]any{"tenant": "a"}), "needs an authenticated caller with claim db_role"},
			{asCaller(context.Background(), "mallory", map[string]any{"tenant": "a'; --", "db_role": r.reader}), "does not match the pattern"},
			{context.Background(), "the local user"},
		} {
			_, err := call(c.ctx, list)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		}
	})

	t.Run("write", func(t *testing.T) {
		ins := r.compile(t, identity, fmt.Sprintf(`  read_only = false
  query = "INSERT INTO %s.orders (tenant, item) VALUES (current_setting('app.tenant'), 'new') RETURNING tenant"`, r.schema))
		out, err := call(tenantB, ins)
		if err != nil {
			t.Fatal(err)
		}
		if ts := tenantsOf(t, out); len(ts) != 1 || ts[0] != "b" {
			t.Fatalf("inserted %v", ts)
		}
		var n int
		db.raw.QueryRow("SELECT count(*) FROM " + r.schema + ".orders WHERE item = 'new' AND tenant = 'b'").Scan(&n)
		if n != 1 {
			t.Fatalf("the insert was not committed: %d rows", n)
		}
		// Without RETURNING: the Exec path commits too.
		plain := r.compile(t, identity, fmt.Sprintf(`  read_only = false
  query = "INSERT INTO %s.orders (tenant, item) VALUES (current_setting('app.tenant'), 'new')"`, r.schema))
		if out, err := call(tenantB, plain); err != nil || out.Vars["rows_affected"] != int64(1) {
			t.Fatalf("insert: %v %v", out, err)
		}
		db.raw.QueryRow("SELECT count(*) FROM " + r.schema + ".orders WHERE item = 'new' AND tenant = 'b'").Scan(&n)
		if n != 2 {
			t.Fatalf("the plain insert was not committed: %d rows", n)
		}
		db.exec(t, "DELETE FROM "+r.schema+".orders WHERE item = 'new'")
		// The policy's WITH CHECK holds for the caller's tenant only.
		cross := r.compile(t, identity, fmt.Sprintf(`  read_only = false
  query = "INSERT INTO %s.orders (tenant, item) VALUES ('a', 'new')"`, r.schema))
		if _, err := call(tenantB, cross); err == nil || !strings.Contains(err.Error(), "row-level security") {
			t.Fatalf("a write into another tenant: %v", err)
		}
	})

	// Tenants a and b call one tool concurrently, 16 at a time, on a pool
	// of 4 connections: every call sees its own tenant's rows and no other.
	t.Run("concurrent tenants", func(t *testing.T) {
		const calls, workers = 2000, 16
		var next, cross, failed atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= calls; i = next.Add(1) {
					ctx, tenant, want := tenantA, "a", 3
					if i%2 == 0 {
						ctx, tenant, want = tenantB, "b", 2
					}
					out, err := call(ctx, list)
					if err != nil {
						failed.Add(1)
						t.Error(err)
						return
					}
					ts := tenantsOf(t, out)
					if len(ts) != want {
						failed.Add(1)
					}
					for _, got := range ts {
						if got != tenant {
							cross.Add(1)
						}
					}
				}
			}()
		}
		wg.Wait()
		if cross.Load() != 0 || failed.Load() != 0 {
			t.Fatalf("%d cross-tenant rows, %d wrong results in %d calls", cross.Load(), failed.Load(), calls)
		}
	})

	// A tool without identity on the same pool (of one connection) after
	// calls with one: the role and settings ended with their transaction,
	// also when the call before timed out.
	t.Run("no leftover", func(t *testing.T) {
		src := fmt.Sprintf(`database "main" {
  driver = "postgres"
  dsn = %s
  max_open_conns = 1
}
`, hclString(r.dsn))
		h := r.sharedPool(t, src, fmt.Sprintf(`role {
      from_caller = "claims.db_role"
      enum        = [%q]
    }
    setting "tenant" { from_caller = "claims.tenant" }`, r.reader))
		for i := range 40 {
			ctx := tenantA
			if i%2 == 1 {
				ctx = tenantB
			}
			sleep := 0.0
			if i%20 == 5 {
				sleep = 30 // times out: cancelled mid-statement
			}
			out, err := adaptertest.Call(ctx, h.with, map[string]string{"sleep": "number"}, map[string]any{"sleep": sleep})
			if sleep == 0 && err != nil {
				t.Fatal(err)
			}
			if sleep > 0 && (err == nil || !strings.Contains(err.Error(), "timeout")) {
				t.Fatalf("a call that sleeps past its timeout: %v", err)
			}
			if err == nil {
				if rs := rows(t, out); rs[0]["who"] != r.reader {
					t.Fatalf("with identity: %v", rs)
				}
			}
			out, err = adaptertest.Call(context.Background(), h.without, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			rs := rows(t, out)
			if rs[0]["who"] != r.app || (rs[0]["tenant"] != nil && rs[0]["tenant"] != "") || rs[0]["n"] != int64(0) {
				t.Fatalf("call %d: a call without identity after one with it: %v", i, rs)
			}
		}
	})
}

// shared are two tools on one database block's pool: one with an identity,
// one without.
type shared struct{ with, without adapter.Handler }

// sharedPool compiles both tools against one backend, as a config with one
// database block and two tools would.
func (r *pgRLS) sharedPool(t *testing.T, dbBlock, identityBody string) shared {
	t.Helper()
	return compileShared(t, dbBlock,
		fmt.Sprintf(`sql {
  database = "main"
  query = "SELECT current_user AS who, current_setting('app.tenant', true) AS tenant, pg_sleep(:sleep) AS s"
  timeout = "1500ms"
  identity {
    %s
  }
}`, identityBody), map[string]string{"sleep": "number"},
		fmt.Sprintf(`sql {
  database = "main"
  query = "SELECT current_user AS who, current_setting('app.tenant', true) AS tenant, (SELECT count(*) FROM %s.orders) AS n"
}`, r.schema))
}

// compileShared decodes dbBlock once and compiles two sql blocks on it.
func compileShared(t *testing.T, dbBlock, withBlock string, withParams map[string]string, withoutBlock string) shared {
	t.Helper()
	file, diags := hclParse(dbBlock + withBlock + "\n" + withoutBlock)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	content, diags := file.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "database", LabelNames: []string{"name"}}, {Type: "sql"}}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	scope := &adapter.Scope{Dir: ".", Functions: funcsTable(), Auth: openCallers}
	var be adapter.Backend
	var sqls []*hcl.Block
	for _, b := range content.Blocks {
		if b.Type == "sql" {
			sqls = append(sqls, b)
			continue
		}
		cfg, d := New().DecodeBackend(&adapter.BackendBlock{Name: "main", Body: b.Body, Range: b.DefRange, Scope: scope})
		if d.HasErrors() {
			t.Fatal(d.Error())
		}
		var err error
		if be, err = cfg.Open(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
	}
	var hs []adapter.Handler
	for i, b := range sqls {
		params := map[string]string{}
		if i == 0 {
			params = withParams
		}
		h, d := New().CompileTool(&adapter.ToolBlock{Tool: "t", Type: "sql", Body: b.Body, Range: b.DefRange, ReadsVars: true,
			Scope:   &adapter.Scope{Dir: ".", Functions: funcsTable(), Params: params, Auth: openCallers},
			Backend: func(string, string) (adapter.Backend, bool) { return be, true }})
		if d.HasErrors() {
			t.Fatal(d.Error())
		}
		hs = append(hs, h)
	}
	return shared{hs[0], hs[1]}
}

// On MySQL/MariaDB, the settings are session variables, cleared before the
// connection goes back to the pool.
func TestMySQLIdentity(t *testing.T) {
	db := openTestDB(t, "mysql")
	tbl := db.table(t, map[string]string{"mysql": "id INT AUTO_INCREMENT PRIMARY KEY, tenant VARCHAR(16), item VARCHAR(16)"})
	db.exec(t, "INSERT INTO "+tbl+" (tenant, item) VALUES ('a','a1'),('a','a2'),('a','a3'),('b','b1'),('b','b2')")
	dbBlock := func(conns int) string {
		return fmt.Sprintf("database \"main\" {\n  driver = \"mysql\"\n  dsn = %s\n  max_open_conns = %d\n}\n", hclString(db.dsn), conns)
	}
	identity := `identity {
    setting "tenant" {
      from_caller = "claims.tenant"
      enum        = ["a", "b"]
    }
  }`
	tenantA := asCaller(context.Background(), "alice", map[string]any{"tenant": "a"})
	tenantB := asCaller(context.Background(), "bob", map[string]any{"tenant": "b"})

	// The "with" tool filters on @app_tenant and may sleep past its
	// timeout; the "without" tool reads @app_tenant on the same pool of
	// one connection.
	for _, readOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("no leftover read_only=%v", readOnly), func(t *testing.T) {
			ro := ""
			if !readOnly {
				ro = "read_only = false"
			}
			h := compileShared(t, dbBlock(1), fmt.Sprintf(`sql {
  database = "main"
  %s
  timeout  = "1500ms"
  query    = "SELECT tenant, item, SLEEP(:sleep) AS s FROM %s WHERE tenant = @app_tenant ORDER BY id"
  %s
}`, ro, tbl, identity), map[string]string{"sleep": "number"}, fmt.Sprintf(`sql {
  database = "main"
  %s
  query    = "SELECT @app_tenant AS tenant, CONNECTION_ID() AS conn"
}`, ro))
			var conn any
			for i := range 40 {
				ctx, want := tenantA, 3
				if i%2 == 1 {
					ctx, want = tenantB, 2
				}
				sleep := 0
				if i%20 == 5 {
					sleep = 30
				}
				out, err := adaptertest.Call(ctx, h.with, map[string]string{"sleep": "number"}, map[string]any{"sleep": sleep})
				switch {
				case sleep > 0 && (err == nil || !strings.Contains(err.Error(), "timeout")):
					t.Fatalf("a call that sleeps past its timeout: %v", err)
				case sleep == 0 && err != nil:
					t.Fatal(err)
				case sleep == 0 && len(rows(t, out)) != want:
					t.Fatalf("call %d: %v", i, rows(t, out))
				}
				out, err = adaptertest.Call(context.Background(), h.without, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				rs := rows(t, out)
				if rs[0]["tenant"] != nil {
					t.Fatalf("call %d: a call without identity sees @app_tenant = %v", i, rs[0]["tenant"])
				}
				if sleep == 0 && i > 0 && conn != nil && rs[0]["conn"] != conn {
					// Not an error: a timed-out connection is replaced.
					t.Logf("call %d: new connection %v", i, rs[0]["conn"])
				}
				conn = rs[0]["conn"]
			}
		})
	}

	t.Run("concurrent tenants", func(t *testing.T) {
		h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Auth: openCallers, Src: dbBlock(4) + fmt.Sprintf(`sql {
  database = "main"
  query    = "SELECT tenant, item FROM %s WHERE tenant = @app_tenant ORDER BY id"
  %s
}`, tbl, identity)})
		const calls, workers = 2000, 16
		var next, cross, wrong atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= calls; i = next.Add(1) {
					ctx, tenant, want := tenantA, "a", 3
					if i%2 == 0 {
						ctx, tenant, want = tenantB, "b", 2
					}
					out, err := adaptertest.Call(ctx, h, nil, nil)
					if err != nil {
						wrong.Add(1)
						t.Error(err)
						return
					}
					ts := tenantsOf(t, out)
					if len(ts) != want {
						wrong.Add(1)
					}
					for _, got := range ts {
						if got != tenant {
							cross.Add(1)
						}
					}
				}
			}()
		}
		wg.Wait()
		if cross.Load() != 0 || wrong.Load() != 0 {
			t.Fatalf("%d cross-tenant rows, %d wrong results in %d calls", cross.Load(), wrong.Load(), calls)
		}
	})

	t.Run("refused", func(t *testing.T) {
		h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Auth: openCallers, Src: dbBlock(1) + fmt.Sprintf(`sql {
  database = "main"
  query    = "SELECT @app_tenant AS t"
  %s
}`, identity)})
		for _, c := range []struct {
			ctx  context.Context
			want string
		}{
			{asCaller(context.Background(), "m", map[string]any{"tenant": "c"}), "not one of the allowed values"},
			{context.Background(), "the local user"},
		} {
			if _, err := adaptertest.Call(c.ctx, h, nil, nil); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		}
	})
}

// A connection whose call did not clear its variables (the reset was never
// reached) clears them when it is next checked out.
func TestMySQLPendingReset(t *testing.T) {
	db := openTestDB(t, "mysql")
	h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Auth: openCallers, Src: fmt.Sprintf(`database "main" {
  driver = "mysql"
  dsn = %s
  max_open_conns = 1
}
sql {
  database = "main"
  query    = "SELECT @app_tenant AS t"
}`, hclString(db.dsn))})
	be := h.(*handler).be
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := be.conn(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{id: (&identity{settings: []idSetting{{name: "tenant"}}}).compile(mysql), values: []any{"a"}}
	s.mysqlArm(conn)
	if err := s.apply(ctx, conn); err != nil {
		t.Fatal(err)
	}
	conn.Close() // back to the pool without the reset
	out, err := adaptertest.Call(ctx, h, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := rows(t, out)[0]["t"]; v != nil {
		t.Fatalf("@app_tenant = %v after a checkout", v)
	}
}

// A tool with an identity may not change it in its query.
func TestIdentityQueryChecks(t *testing.T) {
	for _, c := range []struct {
		driver, dsn, query, want string
	}{
		{"postgres", "postgres://u@127.0.0.1:1/db", "SET ROLE postgres", "SET would change the caller's identity"},
		{"postgres", "postgres://u@127.0.0.1:1/db", "RESET ROLE", "RESET would change"},
		{"postgres", "postgres://u@127.0.0.1:1/db", "SELECT set_config('app.tenant', :t, false)", "set_config() would change"},
		{"postgres", "postgres://u@127.0.0.1:1/db", "SELECT 'set_config(' AS s", ""},
		{"mysql", "u@tcp(127.0.0.1:1)/db", "SET @app_tenant = :t", "SET would change"},
		{"mysql", "u@tcp(127.0.0.1:1)/db", "SELECT @app_tenant := :t", "User variable assigned in a tool with an identity"},
		{"mysql", "u@tcp(127.0.0.1:1)/db", "SELECT * FROM t WHERE tenant = @app_tenant", ""},
		// Statements that assign user variables in ways no token shows
		// (TestMySQLIdentityAssignments runs those MariaDB can run here).
		{"mysql", "u@tcp(127.0.0.1:1)/db", "LOAD DATA INFILE '/tmp/t.csv' INTO TABLE t (@app_tenant)", "LOAD is not a query or a change of rows"},
		{"mysql", "u@tcp(127.0.0.1:1)/db", "LOAD XML INFILE '/tmp/t.xml' INTO TABLE t SET tenant = :t", "LOAD is not"},
		{"mysql", "u@tcp(127.0.0.1:1)/db", "PREPARE s FROM 'SET @app_tenant = ?'", "PREPARE is not"},
		{"mysql", "u@tcp(127.0.0.1:1)/db", "EXECUTE s USING :t", "EXECUTE is not"},
		{"mysql", "u@tcp(127.0.0.1:1)/db", "BEGIN NOT ATOMIC SELECT :t INTO @app_tenant END", "BEGIN is not"},
		{"mysql", "u@tcp(127.0.0.1:1)/db", "HANDLER t READ FIRST", "HANDLER is not"},
	} {
		src := fmt.Sprintf(`database "main" {
  driver = %q
  dsn    = %q
}
sql {
  database  = "main"
  read_only = false
  query     = %q
  identity {
    setting "tenant" { from_caller = "claims.tenant" }
  }
}
`, c.driver, c.dsn, c.query)
		_, diags := adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: src, Auth: openCallers, Params: map[string]string{"t": "string"}})
		if c.want == "" {
			if diags.HasErrors() {
				t.Errorf("%s: %s", c.query, diags.Error())
			}
			continue
		}
		if ok, all := adaptertest.DiagContains(diags, c.want); !ok {
			t.Errorf("%s: want %q, got %s", c.query, c.want, all)
		}
	}
}

// The cost of an identity per call: the same query with and without one
// (PostgreSQL: SET LOCAL ROLE and set_config in the call's transaction;
// MySQL: SET @app_... before and the reset after). Run with -count to
// interleave the two.
func BenchmarkIdentity(b *testing.B) {
	for _, kind := range []string{"postgres", "mysql"} {
		b.Run(kind, func(b *testing.B) {
			db := openTestDB(b, kind)
			var src, query, identity string
			ctx := asCaller(context.Background(), "alice", map[string]any{"tenant": "a"})
			switch kind {
			case "postgres":
				r := setupPGRLS(b, db)
				src = fmt.Sprintf("database \"main\" {\n  driver = \"postgres\"\n  dsn = %s\n}\n", hclString(r.dsn))
				query = "SELECT current_user AS who"
				identity = fmt.Sprintf(`identity {
    role {
      from_caller = "claims.db_role"
      enum        = [%q]
    }
    setting "tenant" { from_caller = "claims.tenant" }
  }`, r.reader)
				ctx = asCaller(context.Background(), "alice", map[string]any{"tenant": "a", "db_role": r.reader})
			case "mysql":
				src = fmt.Sprintf("database \"main\" {\n  driver = \"mysql\"\n  dsn = %s\n}\n", hclString(db.dsn))
				query = "SELECT @app_tenant AS t"
				identity = `identity {
    setting "tenant" { from_caller = "claims.tenant" }
  }`
			}
			for _, with := range []bool{false, true} {
				block := fmt.Sprintf("sql {\n  database = \"main\"\n  query = %q\n", query)
				name := "without"
				if with {
					block += "  " + identity + "\n"
					name = "with"
				}
				h := adaptertest.MustCompile(b, New(), "sql", adaptertest.Config{Src: src + block + "}\n", Auth: openCallers})
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						if _, err := adaptertest.Call(ctx, h, nil, nil); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// A reload that changes only the identity opens a new pool: the live
// backend carries the identity, so it must not be kept.
func TestIdentityFingerprint(t *testing.T) {
	fp := func(identity string) string {
		t.Helper()
		b := backendBlock(t, "driver = \"postgres\"\ndsn = \"postgres://u@127.0.0.1:1/db\"\n"+identity)
		b.Scope.Auth = openCallers
		cfg, diags := New().DecodeBackend(b)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		return cfg.Fingerprint()
	}
	setting := func(path, pattern string) string {
		return fmt.Sprintf("identity {\n  setting \"tenant\" {\n    from_caller = %q\n    pattern = %q\n  }\n}\n", path, pattern)
	}
	seen := map[string]string{}
	for _, id := range []string{"", setting("claims.tenant", "^a$"), setting("claims.org", "^a$"), setting("claims.tenant", "^b$")} {
		f := fp(id)
		if prev, dup := seen[f]; dup {
			t.Errorf("same fingerprint for %q and %q", prev, id)
		}
		seen[f] = id
	}
	if fp(setting("claims.tenant", "^a$")) != fp(setting("claims.tenant", "^a$")) {
		t.Error("the fingerprint of one identity changes")
	}
}

// A tool's identity block over its database's.
func TestIdentityMerge(t *testing.T) {
	src := `database "main" {
  driver = "postgres"
  dsn    = "postgres://u@127.0.0.1:1/db"
  identity {
    role {
      from_caller = "claims.db_role"
      enum        = ["reader"]
    }
    setting "tenant" { from_caller = "claims.tenant" }
    setting "region" { from_caller = "claims.region" }
  }
}
sql {
  database = "main"
  query    = "SELECT 1"
  identity {
    role {
      from_caller = "claims.admin_role"
      enum        = ["admin"]
    }
    setting "region" { from_caller = "claims.home" }
    setting "user" { from_caller = "name" }
  }
}
`
	h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Auth: openCallers})
	id := h.(*handler).identity
	var got []string
	for _, s := range id.settings {
		got = append(got, s.name+"="+s.value.Path)
	}
	if fmt.Sprint(got) != "[region=claims.home tenant=claims.tenant user=name]" {
		t.Errorf("settings %v", got)
	}
	if id.role.Path != "claims.admin_role" || id.roleStmt["admin"] != `SET LOCAL ROLE "admin"` || id.roleStmt["reader"] != "" {
		t.Errorf("role %s %v", id.role.Path, id.roleStmt)
	}
	if id.setSQL != "SELECT set_config('app.region', $1, true), set_config('app.tenant', $2, true), set_config('app.user', $3, true)" {
		t.Errorf("setSQL %s", id.setSQL)
	}
	// The database's identity is unchanged, for its other tools.
	if db := h.(*handler).be.cfg.identity; len(db.settings) != 2 || db.settings[0].value.Path != "claims.region" || db.role.Path != "claims.db_role" {
		t.Errorf("the database's identity changed: %+v", db)
	}
}
