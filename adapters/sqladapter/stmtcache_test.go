package sqladapter

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	sqlite3 "modernc.org/sqlite"

	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

// A read-only tool's statement stays prepared on its connection; SQLite
// prepares it again when the schema changes, so a call after the table was
// replaced sees the new columns and types.
func TestCachedStatementFollowsSchemaChanges(t *testing.T) {
	db := openTestDB(t, "sqlite")
	db.exec(t, "CREATE TABLE things (id INTEGER PRIMARY KEY, v TEXT)")
	db.exec(t, `INSERT INTO things VALUES (1, '{"a":1}')`)
	params := map[string]string{"id": "integer"}
	// One connection: every call runs on the one whose statement is cached.
	h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{
		Src: db.databaseBlock("  max_open_conns = 1") + sqlBlock("SELECT * FROM things WHERE id = :id"), Params: params})
	tl := tool{h, params}
	args := map[string]any{"id": 1.0}
	for range 3 {
		if got := tl.mustCall(t, args).Text; got != `[{"id":1,"v":"{\"a\":1}"}]` {
			t.Fatalf("before the change: %s", got)
		}
	}
	db.exec(t, "DROP TABLE things")
	db.exec(t, "CREATE TABLE things (id INTEGER PRIMARY KEY, v JSON, w BOOLEAN)")
	db.exec(t, `INSERT INTO things VALUES (1, '{"a":1}', 1)`)
	if got := tl.mustCall(t, args).Text; got != `[{"id":1,"v":{"a":1},"w":true}]` {
		t.Errorf("after the change: %s", got)
	}
	// A failing call (the table is gone) leaves the connection usable.
	db.exec(t, "DROP TABLE things")
	if _, err := tl.call(args); err == nil {
		t.Fatal("a query of a dropped table ran")
	}
	db.exec(t, "CREATE TABLE things (id INTEGER PRIMARY KEY, v TEXT)")
	db.exec(t, `INSERT INTO things VALUES (1, 'back')`)
	if got := tl.mustCall(t, args).Text; got != `[{"id":1,"v":"back"}]` {
		t.Errorf("after a failure: %s", got)
	}
}

// The cache keeps at most maxCachedStmts statements per connection, and
// each text runs its own statement.
func TestStmtCacheIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	conn, err := sqlite3.NewConnector(sqliteDSN("file:"+path, true))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dc, err := sqliteReadOnly{conn}.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	cc, ok := dc.(*stmtCacheConn)
	if !ok {
		t.Fatalf("the read-only pool's connection is a %T", dc)
	}
	for i := range maxCachedStmts + 10 {
		for range 2 {
			rows, err := cc.QueryContext(ctx, fmt.Sprintf("SELECT %d + ?", i), []driver.NamedValue{{Ordinal: 1, Value: int64(1)}})
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]driver.Value, 1)
			if err := rows.Next(vals); err != nil || vals[0] != int64(i+1) {
				t.Fatalf("SELECT %d + 1 = %v (%v)", i, vals[0], err)
			}
			if err := rows.Next(vals); err != io.EOF {
				t.Fatalf("a second row: %v", err)
			}
			rows.Close()
		}
		if len(cc.stmts) > maxCachedStmts {
			t.Fatalf("%d statements cached", len(cc.stmts))
		}
	}
	// The authorizer still applies to what the cache prepares.
	if _, err := cc.QueryContext(ctx, "PRAGMA query_only = 0", nil); err == nil {
		t.Error("PRAGMA query_only = 0 ran on a read-only connection")
	}
}
