package sqladapter

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

// rawTool is a read-only tool of db whose statement is raw, as if it had
// passed the load-time checks: it stands for what those checks cannot see
// (a stored procedure, a function, a tokenizer mistake), so that the test
// exercises what the database enforces. exec runs it through Exec.
func (db *testDB) rawTool(t *testing.T, raw string, exec bool) tool {
	t.Helper()
	src := db.databaseBlock("  max_open_conns = 1") + sqlBlock("SELECT 1")
	h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Params: map[string]string{}})
	hh := *h.(*handler)
	hh.query = &compiledQuery{parts: []queryPart{{sql: raw}}}
	hh.exec = exec
	return tool{&hh, map[string]string{}}
}

// A read-only call that tries to make its pooled connection read-write
// must not let any later read-only call write. Each database has one
// connection (max_open_conns = 1), so every call below reuses the one the
// attack ran on. The table's contents are read outside the adapter.
func TestReadOnlyConnectionCannotBeFlipped(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name) VALUES (1, 'original')", tbl))
		type attack struct {
			sql  string
			exec bool
		}
		attacks := map[string][]attack{
			"sqlite": {
				{"PRAGMA query_only = 0", true},
				{"PRAGMA query_only = OFF", false},
				{"PRAGMA main.QUERY_ONLY(0)", false},
				{fmt.Sprintf("PRAGMA query_only = 0; INSERT INTO %s (id, name) VALUES (2, 'multi')", tbl), true},
			},
			"postgres": {
				{"SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", true},
				{"SET default_transaction_read_only = off", true},
				{"RESET ALL", true},
				{"SET TRANSACTION READ WRITE", true},
				{"SELECT set_config('default_transaction_read_only', 'off', false)", false},
				// Several statements in one call: a COMMIT would end the
				// READ ONLY transaction, and what follows would write.
				{fmt.Sprintf("COMMIT; INSERT INTO %s (id, name) VALUES (2, 'multi')", tbl), true},
				{fmt.Sprintf("SET TRANSACTION READ WRITE; INSERT INTO %s (id, name) VALUES (2, 'multi'); COMMIT", tbl), true},
			},
			"mysql": {
				{"SET SESSION TRANSACTION READ WRITE", true},
				{"SET SESSION tx_read_only = 0", true},
				{"SET @@session.transaction_read_only = OFF", true},
			},
		}[db.kind]
		if db.kind == "mysql" {
			// What the load-time check cannot see: a procedure that flips
			// the session, called by a tool that passes every check.
			proc := strings.Replace(tbl, "mcpd_test_", "mcpd_flip_", 1)
			db.exec(t, "CREATE PROCEDURE "+proc+"() SET SESSION TRANSACTION READ WRITE")
			t.Cleanup(func() { db.raw.Exec("DROP PROCEDURE IF EXISTS " + proc) })
			attacks = append(attacks, attack{"CALL " + proc + "()", true})
		}
		if db.kind == "postgres" {
			fn := strings.Replace(tbl, "mcpd_test_", "mcpd_flip_", 1)
			db.exec(t, "CREATE FUNCTION "+fn+"() RETURNS int LANGUAGE plpgsql AS $$ BEGIN "+
				"PERFORM set_config('default_transaction_read_only', 'off', false); RETURN 1; END $$")
			t.Cleanup(func() { db.raw.Exec("DROP FUNCTION IF EXISTS " + fn + "()") })
			attacks = append(attacks, attack{"SELECT " + fn + "()", false})
		}
		write := fmt.Sprintf("INSERT INTO %s (id, name) VALUES (3, 'written')", tbl)
		for _, a := range attacks {
			flip := db.rawTool(t, a.sql, a.exec)
			flip.call(nil) // may fail or not: what matters is the next call
			// The write tool shares the pool (one connection), so the
			// attack and the writes run on the same connection.
			writer := tool{flip.h, nil}
			writer.h.(*handler).query = &compiledQuery{parts: []queryPart{{sql: write}}}
			writer.h.(*handler).exec = true
			for range 3 {
				if _, err := writer.call(nil); err == nil || !strings.HasPrefix(err.Error(), "this tool is read-only: ") {
					t.Errorf("after %q a read-only write gave err = %v", a.sql, err)
				}
			}
			if n := db.count(t, tbl); n != 1 {
				t.Fatalf("after %q the table has %d rows: a read-only tool wrote", a.sql, n)
			}
		}
	})
}

// SQLite refuses, through the read-only pool's authorizer, the statements
// that create files; on the old pool (query_only alone) both created them.
func TestSQLiteReadOnlyCreatesNoFiles(t *testing.T) {
	db := openTestDB(t, "sqlite")
	dir := t.TempDir()
	for _, q := range []string{
		"ATTACH DATABASE '" + filepath.Join(dir, "attached.db") + "' AS x",
		"VACUUM INTO '" + filepath.Join(dir, "copy.db") + "'",
		"SELECT load_extension('" + filepath.Join(dir, "nothing.so") + "')",
	} {
		_, err := db.rawTool(t, q, false).call(nil)
		if err == nil || !strings.HasPrefix(err.Error(), "this tool is read-only: the database refused a statement") {
			t.Errorf("%s: err = %v", q, err)
		}
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("a read-only tool created %v", files)
	}
	// Reading pragmas still works, with and without a name.
	tl := db.rawTool(t, "PRAGMA table_info(sqlite_master)", false)
	if out, err := tl.call(nil); err != nil || len(rows(t, out)) == 0 {
		t.Errorf("PRAGMA table_info: %v", err)
	}
	if _, err := db.rawTool(t, "PRAGMA query_only", false).call(nil); err != nil {
		t.Errorf("PRAGMA query_only: %v", err)
	}
}

// Statements a read-only tool may not run are refused at load time, at the
// words that do it; the same words in strings, quoted identifiers and
// comments are fine. ⟪ and ⟫ mark the range of the diagnostic.
func TestReadOnlyLoadRefusals(t *testing.T) {
	dsn := map[string]string{
		"sqlite":   "file:" + filepath.Join(t.TempDir(), "x.db"),
		"postgres": "postgres://u@localhost/db",
		"mysql":    "u@tcp(localhost:3306)/db",
	}
	const session, outside = "Session change in a read-only tool", "Side effect in a read-only tool"
	tests := []struct {
		driver, query, summary string // summary "" : no error
		attrs                  []string
	}{
		{"sqlite", "⟪PRAGMA query_only =⟫ 0", session, nil},
		{"sqlite", "⟪PRAGMA main.journal_mode =⟫ DELETE", session, nil},
		{"sqlite", "⟪pragma QUERY_ONLY(⟫0)", session, nil},
		{"sqlite", "/* read */ ⟪PRAGMA optimize⟫", outside, nil},
		{"sqlite", "⟪ATTACH⟫ DATABASE 'other.db' AS o", outside, nil},
		{"sqlite", "⟪DETACH⟫ o", outside, nil},
		{"sqlite", "⟪VACUUM⟫ INTO 'copy.db'", outside, nil},
		{"sqlite", "SELECT ⟪load_extension⟫('x.so')", outside, nil},
		{"sqlite", "SELECT 1 WHERE ⟪LOAD_EXTENSION⟫ /* c */ ('x.so')", outside, nil},
		{"sqlite", "⟪BEGIN⟫", session, nil},
		{"postgres", "⟪SET⟫ SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", session, nil},
		{"postgres", "-- a comment\n  ⟪set⟫ default_transaction_read_only = off", session, nil},
		{"postgres", "⟪RESET⟫ ALL", session, nil},
		{"postgres", "⟪DISCARD⟫ ALL", session, nil},
		{"postgres", "⟪COPY⟫ (SELECT 1) TO PROGRAM 'id'", outside, nil},
		{"postgres", "⟪COPY⟫ t TO '/tmp/t.csv'", outside, nil},
		{"postgres", "SELECT ⟪pg_read_file⟫('/etc/passwd')", outside, nil},
		{"postgres", "SELECT pg_catalog.⟪pg_read_binary_file⟫('/etc/passwd')", outside, nil},
		{"postgres", `SELECT ⟪"pg_read_file"⟫('/etc/passwd')`, outside, nil},
		{"postgres", "SELECT ⟪lo_export⟫(1, '/tmp/x')", outside, nil},
		{"postgres", "SELECT * FROM ⟪dblink_exec⟫('dbname=test', 'DELETE FROM t')", outside, nil},
		{"postgres", "SELECT ⟪set_config⟫('search_path', 'x', false)", session, nil},
		{"postgres", "SELECT ⟪pg_advisory_lock⟫(1)", session, nil},
		{"postgres", "⟪DO⟫ $$ BEGIN PERFORM 1; END $$", session, nil},
		{"postgres", "⟪LOAD⟫ 'auto_explain'", outside, nil},
		{"mysql", "⟪SET⟫ SESSION TRANSACTION READ WRITE", session, nil},
		{"mysql", "SELECT * FROM t ⟪INTO OUTFILE⟫ '/tmp/x'", outside, nil},
		{"mysql", "SELECT 1 ⟪into\n  dumpfile⟫ '/tmp/x'", outside, nil},
		{"mysql", "SELECT ⟪LOAD_FILE⟫('/etc/passwd')", outside, nil},
		{"mysql", "SELECT 1 /*! ⟪INTO OUTFILE⟫ '/tmp/x' */", outside, nil},
		{"mysql", "SELECT 1 /*M!100000 ⟪INTO OUTFILE⟫ '/tmp/x' */", outside, nil},
		{"mysql", "⟪LOCK⟫ TABLES t READ", session, nil},
		{"mysql", "⟪START⟫ TRANSACTION", session, nil},
		{"mysql", "SELECT ⟪GET_LOCK⟫('x', 0)", session, nil},
		{"mysql", "⟪USE⟫ other", session, nil},
		{"mysql", "⟪LOAD⟫ DATA INFILE '/etc/passwd' INTO TABLE t", outside, nil},
		// Not refused: the words are text, names or comments.
		{"sqlite", "SELECT 'PRAGMA query_only = 0; ATTACH x' AS s", "", nil},
		{"sqlite", "PRAGMA table_info(t)", "", nil},
		{"sqlite", "PRAGMA query_only", "", nil},
		{"sqlite", "SELECT [load_extension], \"attach\" FROM t -- VACUUM INTO 'x'", "", nil},
		{"postgres", "SELECT 'COPY x TO PROGRAM ''id''' AS s, $$ pg_read_file('x') $$ AS t", "", nil},
		{"postgres", "SELECT \"set\", set_config_count FROM t /* SET x = 1; RESET ALL */", "", nil},
		{"postgres", "SELECT current_setting('search_path')", "", nil},
		{"mysql", "SELECT 'INTO OUTFILE' AS s", "", nil},
		{"mysql", "SELECT `into`, \"LOAD_FILE('x')\" FROM t # INTO OUTFILE '/tmp/x'", "", nil},
		{"mysql", "SELECT 1 -- INTO DUMPFILE '/tmp/x'\n", "", nil},
		{"mysql", "SELECT load_file_count FROM t /* SET x = 1 */", "", nil},
		// Write tools may: the checks are for read-only tools.
		{"sqlite", "PRAGMA journal_mode = WAL", "", []string{"read_only = false"}},
		{"mysql", "SET SESSION sql_mode = 'ANSI'", "", []string{"read_only = false"}},
	}
	for _, tt := range tests {
		t.Run(tt.driver+" "+tt.query, func(t *testing.T) {
			db := fmt.Sprintf("database \"main\" {\n  driver = %q\n  dsn    = %s\n}\n", tt.driver, hclString(dsn[tt.driver]))
			src, start, end := markRange(t, db+sqlBlock(tt.query, tt.attrs...))
			_, diags := adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: src, Params: map[string]string{}})
			if tt.summary == "" {
				if diags.HasErrors() {
					t.Fatalf("refused: %s", diags.Error())
				}
				return
			}
			var found *hcl.Diagnostic
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					if found != nil {
						t.Errorf("a second error: %s", d.Summary)
					}
					found = d
				}
			}
			if found == nil || found.Summary != tt.summary {
				t.Fatalf("want the error %q, got:\n%s", tt.summary, diags.Error())
			}
			if !strings.Contains(found.Detail, "read_only = false") {
				t.Errorf("detail does not say what to do: %s", found.Detail)
			}
			got := found.Subject
			if got.Filename != "test.hcl" || got.Start.Line != start.Line || got.Start.Column != start.Column ||
				got.End.Line != end.Line || got.End.Column != end.Column {
				t.Errorf("diagnostic at %d:%d-%d:%d, want %d:%d-%d:%d", got.Start.Line, got.Start.Column, got.End.Line, got.End.Column,
					start.Line, start.Column, end.Line, end.Column)
			}
		})
	}
}

// markRange removes ⟪ and ⟫ from src and returns where each was.
func markRange(t *testing.T, src string) (string, hcl.Pos, hcl.Pos) {
	t.Helper()
	pos := func(before string) hcl.Pos {
		return hcl.Pos{Line: strings.Count(before, "\n") + 1, Column: utf8.RuneCountInString(before[strings.LastIndex(before, "\n")+1:]) + 1}
	}
	i := strings.Index(src, "⟪")
	if i < 0 {
		return src, hcl.Pos{}, hcl.Pos{}
	}
	src = src[:i] + src[i+len("⟪"):]
	j := strings.Index(src, "⟫")
	if j < 0 {
		t.Fatal("no ⟫")
	}
	return src[:j] + src[j+len("⟫"):], pos(src[:i]), pos(src[:j])
}
