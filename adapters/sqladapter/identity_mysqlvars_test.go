package sqladapter

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

// mysqlAssignmentSpellings are the ways MySQL and MariaDB let a statement
// assign a user variable (dev.mysql.com/doc/refman/8.0/en/user-variables.html,
// mariadb.com/kb/en/user-defined-variables): each with the text that the
// diagnostic must point at. :t is the model's argument.
var mysqlAssignmentSpellings = []struct {
	name, query, at string
	sqlMode         string // added to the session's sql_mode for the demonstration
}{
	{"unquoted :=", "SELECT @app_tenant := :t AS x", "app_tenant :=", ""},
	{"no spaces", "SELECT @app_tenant:=:t AS x", "app_tenant:=", ""},
	{"other case", "SELECT @APP_Tenant := :t AS x", "APP_Tenant :=", ""},
	{"single-quoted name", "SELECT @'app_tenant' := :t AS x", "@'app_tenant' :=", ""},
	{"double-quoted name", `SELECT @"app_tenant" := :t AS x`, `@"app_tenant" :=`, ""},
	{"backquoted name", "SELECT @`app_tenant` := :t AS x", "`app_tenant` :=", ""},
	{"backquoted, other case", "SELECT @`APP_TENANT` := :t AS x", "`APP_TENANT` :=", ""},
	{"escape in a quoted name", `SELECT @'app_t\enant' := :t AS x`, `@'app_t\enant' :=`, ""},
	{"in WHERE", "SELECT 1 AS x FROM DUAL WHERE (@app_tenant := :t) IS NOT NULL", "app_tenant :=", ""},
	{"in a MariaDB executable comment", "SELECT 1 AS x /*M! , @app_tenant := :t */", "app_tenant :=", ""},
	{"in a MySQL executable comment", "SELECT 1 AS x /*!50000 , @app_tenant := :t */", "app_tenant :=", ""},
	{"DO", "DO @app_tenant := :t", "app_tenant :=", ""},
	{"SELECT INTO", "SELECT :t INTO @app_tenant", "INTO @", ""},
	{"SELECT INTO, quoted", "SELECT :t INTO @'app_tenant'", "INTO @", ""},
	{"SELECT INTO, second target", "SELECT 1, :t INTO @mcpd_unused, @app_tenant", "INTO @", ""},
	{"SELECT INTO before FROM", "SELECT :t INTO @app_tenant FROM DUAL", "INTO @", ""},
	{"SELECT INTO in parentheses", "(SELECT :t) INTO @app_tenant", "INTO @", ""},
	{"WITH ... INTO", "WITH c AS (SELECT :t AS v) SELECT v INTO @app_tenant FROM c", "INTO @", ""},
	{"SET =", "SET @app_tenant = :t", "SET", ""},
	{"SET :=", "SET @app_tenant := :t", "SET", ""},
	{"SET quoted, other case", "SET @`APP_TENANT` = :t", "SET", ""},
	{"SET in an executable comment", "/*!SET @app_tenant = :t */", "SET", ""},
	{"EXECUTE IMMEDIATE", "EXECUTE IMMEDIATE CONCAT('SET @app_tenant = ', QUOTE(:t))", "EXECUTE", ""},
	{"GET DIAGNOSTICS", "GET DIAGNOSTICS @app_tenant = NUMBER", "GET", ""},
	{"CALL with an OUT parameter", "CALL mcpd_test_echo(:t, @app_tenant)", "@", ""},
	// With NO_BACKSLASH_ESCAPES (a server's or a DSN's sql_mode), 'x\' ends
	// at the backslash: the assignment that mcpd's default reading puts in
	// the string is SQL, and the comment hides the rest.
	{"string ended by the sql_mode", "SELECT 'x\\', @app_tenant := 0x62 -- '", "\\'", "NO_BACKSLASH_ESCAPES"},
}

// Every way of assigning a user variable is refused in a MySQL/MariaDB tool
// with an identity, at load, with the file:line:col of the words that do
// it. For each spelling, the test first shows that MariaDB really assigns
// @app_tenant (the caller's tenant) with it, run on a connection as mcpd
// runs a call: the caller's value set, the query run with the model's
// argument bound.
func TestMySQLIdentityAssignments(t *testing.T) {
	db := openTestDB(t, "mysql")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db.exec(t, "DROP PROCEDURE IF EXISTS mcpd_test_echo")
	db.exec(t, "CREATE PROCEDURE mcpd_test_echo(IN a TEXT, OUT b TEXT) SET b = a")
	t.Cleanup(func() { db.raw.Exec("DROP PROCEDURE IF EXISTS mcpd_test_echo") })
	conn, err := db.raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	for _, c := range mysqlAssignmentSpellings {
		t.Run(c.name, func(t *testing.T) {
			// MariaDB assigns the variable.
			if _, err := conn.ExecContext(ctx, "SET @app_tenant = 'a', SESSION sql_mode = DEFAULT"); err != nil {
				t.Fatal(err)
			}
			if c.sqlMode != "" {
				if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode = CONCAT(@@sql_mode, ',"+c.sqlMode+"')"); err != nil {
					t.Fatal(err)
				}
			}
			q, args := c.query, []any{}
			if strings.Contains(q, ":t") {
				q, args = strings.Replace(q, ":t", "?", 1), []any{"b"}
			}
			if strings.HasPrefix(q, "EXECUTE IMMEDIATE") {
				// Not in the prepared statement protocol: bound by hand.
				q, args = strings.Replace(q, "?", "'b'", 1), nil
			}
			rows, err := conn.QueryContext(ctx, q, args...)
			if err != nil {
				t.Fatalf("MariaDB refused %s: %v", q, err)
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			var got sql.NullString
			if err := conn.QueryRowContext(ctx, "SELECT @app_tenant").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got.String == "a" {
				t.Fatalf("%s did not assign @app_tenant on MariaDB: the spelling is not one", c.query)
			}

			// mcpd refuses the tool, at the words that assign.
			src := fmt.Sprintf(`database "main" {
  driver = "mysql"
  dsn    = %s
}
sql {
  database  = "main"
  read_only = false
  query     = <<-SQL
    %s
  SQL
  identity {
    setting "tenant" { from_caller = "claims.tenant" }
  }
}
`, hclString(db.dsn), c.query)
			_, diags := adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: src, Auth: openCallers, Params: map[string]string{"t": "string"}})
			if !diags.HasErrors() {
				t.Fatalf("%s: no error", c.query)
			}
			d := diags[0]
			if d.Summary != "User variable assigned in a tool with an identity" && d.Summary != "Identity changed by the query" && d.Summary != "Ambiguous string in a tool with an identity" {
				t.Errorf("%s: %s", c.query, diags.Error())
			}
			col := strings.Index(c.query, c.at) + 5
			if d.Subject == nil || d.Subject.Filename != "test.hcl" || d.Subject.Start.Line != 9 || d.Subject.Start.Column != col {
				t.Errorf("%s: diagnostic at %v, want test.hcl:9:%d: %s", c.query, d.Subject, col, diags.Error())
			}
		})
	}
}

// The checks refuse assignments, not reads: what a tool with an identity
// normally runs loads.
func TestMySQLIdentityReadsVariables(t *testing.T) {
	for _, q := range []string{
		"SELECT * FROM t WHERE tenant = @app_tenant",
		"SELECT * FROM t WHERE @app_tenant = tenant",
		"SELECT @`app_tenant` AS t, @'app_tenant' AS u",
		"INSERT INTO t (tenant, item) VALUES (@app_tenant, :t)",
		"INSERT INTO t (tenant, item) SELECT @app_tenant, :t",
		"UPDATE t SET item = :t WHERE tenant = @app_tenant",
		"DELETE FROM t WHERE tenant = @app_tenant AND item = :t",
		"SELECT ':= INTO @app_tenant' AS s -- := INTO @x\n",
		"CALL report(:t)",
		"SELECT * FROM t WHERE tenant = @app_tenant INTO OUTFILE '/tmp/x'",
	} {
		src := fmt.Sprintf(`database "main" {
  driver = "mysql"
  dsn    = "u@tcp(127.0.0.1:1)/db"
}
sql {
  database  = "main"
  read_only = false
  query     = %q
  identity {
    setting "tenant" { from_caller = "claims.tenant" }
  }
}
`, q)
		_, diags := adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: src, Auth: openCallers, Params: map[string]string{"t": "string"}})
		if diags.HasErrors() {
			t.Errorf("%s: %s", q, diags.Error())
		}
	}
}
