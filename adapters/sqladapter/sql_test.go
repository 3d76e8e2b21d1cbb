package sqladapter

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

var (
	pID     = map[string]string{"id": "integer"}
	pIDName = map[string]string{"id": "integer", "name": "string"}
	writes  = "read_only = false"
)

func TestBoundValuesComeBackLiterally(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		insert := db.tool(t, fmt.Sprintf("INSERT INTO %s (id, name) VALUES (:id, :name)", tbl), pIDName, writes)
		get := db.tool(t, fmt.Sprintf("SELECT name FROM %s WHERE id = :id", tbl), pID)
		values := []string{
			"plain",
			"O'Brien",
			"'; DROP TABLE " + tbl + "; --",
			`" OR 1=1 --`,
			`' OR '1'='1`,
			`back\slash \' \" \\`,
			"日本語 🎉 ünïcødé",
			":notaparam {{name}} $1 ? @x",
			"100% _match_",
			"new\nline\ttab\r",
			"",
		}
		if db.kind != "postgres" {
			values = append(values, "nul\x00byte") // PostgreSQL text cannot hold NUL: see below
		}
		for i, v := range values {
			insert.mustCall(t, map[string]any{"id": float64(i + 1), "name": v})
			got := rows(t, get.mustCall(t, map[string]any{"id": float64(i + 1)}))
			if len(got) != 1 || got[0]["name"] != v {
				t.Errorf("value %q came back as %#v", v, got)
			}
		}
		if n := db.count(t, tbl); n != len(values) {
			t.Errorf("table has %d rows, want %d", n, len(values))
		}
		if db.kind == "postgres" {
			_, err := insert.call(map[string]any{"id": 1000.0, "name": "nul\x00byte"})
			if err == nil || !strings.HasPrefix(err.Error(), "the query failed: ") {
				t.Errorf("NUL in PostgreSQL text: err = %v, want a query failure", err)
			}
		}
	})
}

func TestReadOnlyIsEnforcedByTheDatabase(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name) VALUES (1, 'original')", tbl))
		writesSQL := []string{
			"INSERT INTO %s (id, name) VALUES (2, 'sneaky')",
			"UPDATE %s SET name = 'changed'",
			"DELETE FROM %s",
			"DROP TABLE %s",
		}
		if db.kind == "postgres" {
			// Not caught by any parsing: a write inside a SELECT.
			writesSQL = append(writesSQL, "WITH d AS (DELETE FROM %s RETURNING id) SELECT count(*) FROM d")
		}
		for _, q := range writesSQL {
			query := fmt.Sprintf(q, tbl)
			h, diags := db.compile(t, sqlBlock(query), map[string]string{})
			if diags.HasErrors() {
				t.Fatalf("%s: %s", query, diags.Error())
			}
			_, err := tool{h, map[string]string{}}.call(nil)
			const want = "this tool is read-only: the database refused a write: "
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s: err = %v, want %q...", query, err, want)
			}
		}
		get := db.tool(t, fmt.Sprintf("SELECT name FROM %s", tbl), nil)
		if got := rows(t, get.mustCall(t, nil)); len(got) != 1 || got[0]["name"] != "original" {
			t.Errorf("after refused writes the table holds %v", got)
		}
		// The refusals left no connection read-only for a tool that writes.
		update := db.tool(t, fmt.Sprintf("UPDATE %s SET name = :name", tbl), map[string]string{"name": "string"}, writes)
		for range 5 {
			update.mustCall(t, map[string]any{"name": "updated"})
		}
		if got := rows(t, get.mustCall(t, nil)); got[0]["name"] != "updated" {
			t.Errorf("write tool did not write: %v", got)
		}
	})
}

func TestWriteInReadOnlyToolWarnsAtLoad(t *testing.T) {
	db := openTestDB(t, "sqlite")
	_, diags := db.compile(t, sqlBlock("DELETE FROM t"), map[string]string{})
	if diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Write in a read-only tool" {
		t.Errorf("diags = %v, want one warning", diags)
	}
}

func TestMaxRowsTruncationIsFlagged(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		for i := 1; i <= 5; i++ {
			db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name) VALUES (%d, 'n%d')", tbl, i, i))
		}
		for _, tt := range []struct {
			maxRows, want int
			truncated     bool
		}{{3, 3, true}, {4, 4, true}, {5, 5, false}, {1000, 5, false}} {
			tl := db.tool(t, fmt.Sprintf("SELECT id FROM %s ORDER BY id", tbl), nil, fmt.Sprintf("max_rows = %d", tt.maxRows))
			out := tl.mustCall(t, nil)
			if got := rows(t, out); len(got) != tt.want || out.Vars["row_count"] != int64(tt.want) {
				t.Errorf("max_rows %d: %d rows (row_count %v), want %d", tt.maxRows, len(got), out.Vars["row_count"], tt.want)
			}
			if out.Vars["truncated"] != tt.truncated {
				t.Errorf("max_rows %d: truncated = %v, want %v", tt.maxRows, out.Vars["truncated"], tt.truncated)
			}
			if strings.Contains(out.Text, "cut at max_rows") != tt.truncated {
				t.Errorf("max_rows %d: text does not say whether it was cut:\n%s", tt.maxRows, out.Text)
			}
		}
	})
}

func TestColumnTypesMapToJSON(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		bytes, created := map[string]string{"sqlite": "x'00ff10'", "postgres": `'\x00ff10'::bytea`, "mysql": "X'00ff10'"}, "'2024-05-06 07:08:09.123456'"
		if db.kind == "postgres" {
			created = "'2024-05-06 07:08:09.123456+00'"
		}
		db.exec(t, fmt.Sprintf(`INSERT INTO %s (id, name, note, price, big, ratio, flag, created, day, data, doc)
			VALUES (1, 'Zoë', NULL, 12.30, 9007199254740993, 0.5, TRUE, %s, '2024-05-06', %s, '{"a": [1, 2], "b": null}')`,
			tbl, created, bytes[db.kind]))
		db.exec(t, fmt.Sprintf(`INSERT INTO %s (id, name, big, flag) VALUES (2, 'plain', -42, FALSE)`, tbl))

		get := db.tool(t, fmt.Sprintf("SELECT id, name, note, price, big, ratio, flag, created, day, data, doc FROM %s ORDER BY id", tbl), nil)
		out := get.mustCall(t, nil)
		got := rows(t, out)
		wantDoc := map[string]any{"a": []any{int64(1), int64(2)}, "b": nil} // JSON numbers exact: whole ones are int64
		want := map[string]any{
			"id": int64(1), "name": "Zoë", "note": nil, "price": "12.30", "big": "9007199254740993", "ratio": 0.5,
			"flag": true, "created": "2024-05-06T07:08:09.123456Z", "day": "2024-05-06", "data": "AP8Q", "doc": wantDoc,
		}
		switch db.kind {
		case "sqlite":
			want["price"] = 12.3 // SQLite has no decimal type: NUMERIC affinity stores a REAL
		case "mysql":
			want["flag"] = int64(1) // BOOLEAN is TINYINT(1)
			if s, ok := got[0]["doc"].(string); ok {
				// MariaDB's JSON is LONGTEXT: the text comes back as it is.
				v, err := adapter.DecodeJSON([]byte(s))
				if err != nil || !reflect.DeepEqual(v, wantDoc) {
					t.Errorf("doc = %q", s)
				}
				want["doc"] = s
			}
		}
		for k, w := range want {
			if g := got[0][k]; !reflect.DeepEqual(g, w) {
				t.Errorf("%s = %#v (%T), want %#v (%T)", k, g, g, w, w)
			}
		}
		wantFlag := any(false)
		if db.kind == "mysql" {
			wantFlag = int64(0)
		}
		if got[1]["big"] != int64(-42) || got[1]["flag"] != wantFlag || got[1]["created"] != nil || got[1]["data"] != nil {
			t.Errorf("second row = %#v", got[1])
		}
		if _, err := json.Marshal(out.Vars["rows"]); err != nil {
			t.Errorf("rows are not JSON: %v", err)
		}
		if db.kind == "postgres" {
			special := db.tool(t, "SELECT 'NaN'::float8 AS nan, '-Infinity'::float8 AS neg, 0.1::float4 AS f4, 'infinity'::numeric AS inf, "+
				"'2024-01-02 03:04:05'::timestamp AS naive, '12:34:56'::time AS tod, '00000000-0000-0000-0000-000000000001'::uuid AS id, "+
				"ARRAY[1,2] AS arr, 123456789012345678901234567890.5::numeric AS huge", nil)
			r := rows(t, special.mustCall(t, nil))[0]
			wantPG := map[string]any{"nan": "NaN", "neg": "-Infinity", "f4": 0.1, "inf": "Infinity", "naive": "2024-01-02T03:04:05Z",
				"tod": "12:34:56", "id": "00000000-0000-0000-0000-000000000001", "arr": "{1,2}", "huge": "123456789012345678901234567890.5"}
			if !reflect.DeepEqual(r, wantPG) {
				t.Errorf("postgres specials = %#v\nwant %#v", r, wantPG)
			}
		}
		if db.kind == "mysql" {
			bits := db.table(t, map[string]string{"mysql": "b BIT(10), e ENUM('small', 'large'), y YEAR"})
			db.exec(t, fmt.Sprintf("INSERT INTO %s VALUES (b'1000000101', 'large', 2024)", bits))
			r := rows(t, db.tool(t, "SELECT b, e, y FROM "+bits, nil).mustCall(t, nil))[0]
			if want := map[string]any{"b": int64(517), "e": "large", "y": int64(2024)}; !reflect.DeepEqual(r, want) {
				t.Errorf("mysql BIT, ENUM, YEAR = %#v, want %#v", r, want)
			}
			special := db.tool(t, "SELECT CAST(0.1 AS FLOAT) AS f, CAST(18446744073709551615 AS UNSIGNED) AS u, TIME('12:34:56') AS tod, "+
				"b'101' AS bits, CAST('x' AS BINARY) AS bin, CAST(1.50 AS DECIMAL(5,2)) AS d", nil)
			r = rows(t, special.mustCall(t, nil))[0]
			wantMy := map[string]any{"f": 0.1, "u": "18446744073709551615", "tod": "12:34:56", "bits": "BQ==", "bin": "eA==", "d": "1.50"}
			// b'101' is a binary string literal, not a BIT column: bytes, base64.
			if !reflect.DeepEqual(r, wantMy) {
				t.Errorf("mysql specials = %#v\nwant %#v", r, wantMy)
			}
		}
	})
}

func TestIdentifierParams(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name) VALUES (1, 'b'), (2, 'a')", tbl))
		params := map[string]string{"sort_by": "string"}
		tl := db.tool(t, fmt.Sprintf("SELECT id FROM %s ORDER BY {{sort_by}} LIMIT 1", tbl), params,
			`identifiers = { sort_by = ["id", "name"] }`)
		for sortBy, wantID := range map[string]int64{"id": 1, "name": 2} {
			if got := rows(t, tl.mustCall(t, map[string]any{"sort_by": sortBy})); got[0]["id"] != wantID {
				t.Errorf("sort_by %s: first id %v, want %d", sortBy, got[0]["id"], wantID)
			}
		}
		for _, bad := range []any{"price", "id; DROP TABLE " + tbl, `name" DESC --`, "ID", 1.0, nil} {
			_, err := tl.call(map[string]any{"sort_by": bad})
			if err == nil || !strings.Contains(err.Error(), `argument "sort_by" must be one of id, name`) {
				t.Errorf("sort_by %#v: err = %v", bad, err)
			}
		}
		if n := db.count(t, tbl); n != 2 {
			t.Errorf("table has %d rows", n)
		}
	})
}

func TestPlaceholderTranslation(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name) VALUES (1, 'one'), (2, 'two'), (101, 'hundred-one')", tbl))
		params := map[string]string{"id": "integer", "skip": "string"}
		query := fmt.Sprintf(`SELECT ':notaparam' AS s, id -- :not_a_param_either
			FROM %s /* :nor_this */
			WHERE (id = :id OR id = :id + 100) AND name <> :skip
			ORDER BY id`, tbl)
		if db.kind == "postgres" {
			query = fmt.Sprintf(`SELECT ':notaparam'::text AS s, id::int AS id FROM %s
				WHERE (id = :id::bigint OR id = :id + 100) AND name <> :skip::text ORDER BY id`, tbl)
		}
		tl := db.tool(t, query, params)
		got := rows(t, tl.mustCall(t, map[string]any{"id": 1.0, "skip": "nothing"}))
		if len(got) != 2 || got[0]["s"] != ":notaparam" || got[0]["id"] != int64(1) || got[1]["id"] != int64(101) {
			t.Errorf("rows = %v", got)
		}
		got = rows(t, tl.mustCall(t, map[string]any{"id": 1.0, "skip": "hundred-one"}))
		if len(got) != 1 {
			t.Errorf("rows = %v", got)
		}
	})
}

func TestOptionalParamIsNull(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name) VALUES (1, 'a'), (2, 'b')", tbl))
		cond := "(:name IS NULL OR name = :name)"
		if db.kind == "postgres" {
			cond = "(:name::text IS NULL OR name = :name)"
		}
		tl := db.tool(t, fmt.Sprintf("SELECT id FROM %s WHERE %s ORDER BY id", tbl, cond), map[string]string{"name": "string"})
		if got := rows(t, tl.mustCall(t, nil)); len(got) != 2 {
			t.Errorf("without name: %v", got)
		}
		if got := rows(t, tl.mustCall(t, map[string]any{"name": "b"})); len(got) != 1 || got[0]["id"] != int64(2) {
			t.Errorf("name b: %v", got)
		}
	})
}

func TestArrayParamsBindAsJSON(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c')", tbl))
		in := map[string]string{
			"sqlite":   "SELECT value FROM json_each(:ids)",
			"postgres": "SELECT jsonb_array_elements_text(:ids::jsonb)::bigint",
			"mysql":    "SELECT j.v FROM JSON_TABLE(:ids, '$[*]' COLUMNS (v BIGINT PATH '$')) AS j",
		}[db.kind]
		tl := db.tool(t, fmt.Sprintf("SELECT name FROM %s WHERE id IN (%s) ORDER BY id", tbl, in), map[string]string{"ids": "array"})
		got := rows(t, tl.mustCall(t, map[string]any{"ids": []any{1.0, 3.0}}))
		if len(got) != 2 || got[0]["name"] != "a" || got[1]["name"] != "c" {
			t.Errorf("rows = %v", got)
		}
	})
}

func TestWrites(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		insert := db.tool(t, fmt.Sprintf("INSERT INTO %s (name) VALUES (:name)", tbl), map[string]string{"name": "string"}, writes)
		out := insert.mustCall(t, map[string]any{"name": "first"})
		if out.Vars["rows_affected"] != int64(1) || out.Structured != nil {
			t.Errorf("insert: %#v, structured %#v", out.Vars, out.Structured)
		}
		if db.kind == "postgres" {
			if out.Vars["last_insert_id"] != nil {
				t.Errorf("postgres has no last insert id: %#v", out.Vars)
			}
		} else if id, ok := out.Vars["last_insert_id"].(int64); !ok || id < 1 {
			t.Errorf("last_insert_id: %#v", out.Vars)
		} else if !strings.Contains(out.Text, fmt.Sprintf("Last insert id: %d.", id)) {
			t.Errorf("text = %q", out.Text)
		}
		checkVars(t, out)
		insert.mustCall(t, map[string]any{"name": "second"})

		update := db.tool(t, fmt.Sprintf("UPDATE %s SET note = :note", tbl), map[string]string{"note": "string"}, writes)
		out = update.mustCall(t, map[string]any{"note": "x"})
		if out.Vars["rows_affected"] != int64(2) || out.Text != "2 rows affected." {
			t.Errorf("update: %#v %q", out.Vars, out.Text)
		}
		if out.Vars["last_insert_id"] != nil {
			t.Errorf("an update has no last_insert_id: %#v", out.Vars)
		}
		checkVars(t, out)

		if db.kind != "mysql" { // MySQL has no RETURNING (MariaDB has it for INSERT and DELETE only)
			ret := db.tool(t, fmt.Sprintf("UPDATE %s SET note = :note WHERE name = 'first' RETURNING name, note", tbl),
				map[string]string{"note": "string"}, writes)
			got := rows(t, ret.mustCall(t, map[string]any{"note": "returned"}))
			if len(got) != 1 || got[0]["note"] != "returned" {
				t.Errorf("RETURNING rows = %v", got)
			}
		}
	})
}

func checkVars(t *testing.T, out *adapter.Output) {
	t.Helper()
	var keys []string
	for k := range out.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := slices.Sorted(slices.Values((&handler{}).Vars()))
	if !slices.Equal(keys, want) {
		t.Errorf("Vars keys = %v, want %v", keys, want)
	}
}

func TestResultShape(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name, note) VALUES (1, 'a', 'x'), (2, 'a very long name that goes on and on and on and on', NULL)", tbl))
		out := db.tool(t, fmt.Sprintf("SELECT t.id, t.name, u.id, u.note FROM %s t JOIN %s u ON u.id = t.id ORDER BY t.id", tbl, tbl), nil).mustCall(t, nil)
		if cols := out.Vars["columns"]; !reflect.DeepEqual(cols, []any{"id", "name", "id_2", "note"}) {
			t.Errorf("columns = %v", cols)
		}
		checkVars(t, out)
		want := `[{"id":1,"name":"a","id_2":1,"note":"x"},{"id":2,"name":"a very long name that goes on and on and on and on","id_2":2,"note":null}]`
		if out.Text != want || out.Structured != nil {
			t.Errorf("text:\n%s\nwant:\n%s\nstructured: %v", out.Text, want, out.Structured)
		}

		empty := db.tool(t, fmt.Sprintf("SELECT id, name FROM %s WHERE id < 0", tbl), nil).mustCall(t, nil)
		if empty.Text != "[]" || empty.Vars["row_count"] != int64(0) || len(empty.Vars["rows"].([]any)) != 0 {
			t.Errorf("empty result: text %q, vars %v", empty.Text, empty.Vars)
		}
	})
}

func TestTimeoutCancelsOnTheServer(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		marker := fmt.Sprintf("mcpd_timeout_%08x", rand.Uint32())
		slow := map[string]string{
			"postgres": "SELECT pg_sleep(10) AS " + marker,
			"mysql":    "SELECT BENCHMARK(20000000000, MD5('" + marker + "')) AS x",
			"sqlite":   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS " + marker + " FROM c",
		}[db.kind]
		tl := db.tool(t, slow, nil, `timeout = "200ms"`)
		start := time.Now()
		_, err := tl.call(nil)
		elapsed := time.Since(start)
		if err == nil || err.Error() != "the query did not finish within its 200ms timeout and was cancelled" {
			t.Fatalf("err = %v", err)
		}
		if elapsed > 1500*time.Millisecond {
			t.Errorf("the call took %s", elapsed)
		}
		running := map[string]string{
			"postgres": "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%" + marker + "%'",
			"mysql":    "SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '%" + marker + "%'",
		}[db.kind]
		if running == "" {
			return // SQLite runs in-process: the interrupt stopped it
		}
		// The kill travels on a fresh connection: allow for a loaded machine
		// (CI runs this under -race; 5s was once too short with the load
		// at 20), far below the query's own length (minutes).
		deadline := time.Now().Add(15 * time.Second)
		for {
			var n int
			if err := db.raw.QueryRow(running).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the query is still running on the server 15s after the timeout")
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The pool is healthy afterwards.
		if got := rows(t, db.tool(t, "SELECT 1 AS one", nil).mustCall(t, nil)); got[0]["one"] != int64(1) {
			t.Errorf("after timeout: %v", got)
		}
	})
}

func TestDatabaseQueryTimeoutIsTheDefault(t *testing.T) {
	db := openTestDB(t, "sqlite")
	src := db.databaseBlock(`  query_timeout = "100ms"`) +
		sqlBlock("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")
	h := mustCompileSrc(t, src, nil)
	if _, err := (tool{h, nil}).call(nil); err == nil || !strings.Contains(err.Error(), "100ms timeout") {
		t.Errorf("err = %v", err)
	}
}

func TestCallerCancellation(t *testing.T) {
	db := openTestDB(t, "sqlite")
	tl := db.tool(t, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := adaptertest.Call(ctx, tl.h, tl.params, nil)
	if err == nil || err.Error() != "the call was cancelled before the query finished" {
		t.Errorf("err = %v", err)
	}
}

func mustCompileSrc(t testing.TB, src string, params map[string]string) adapter.Handler {
	t.Helper()
	return adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Params: params})
}

// Only a block with a params attribute reads the call's evaluation
// context; the engine does not build one for the others.
func TestReadsEval(t *testing.T) {
	db := openTestDB(t, "sqlite")
	params := map[string]string{"id": "integer"}
	for _, tt := range []struct {
		block string
		want  bool
	}{
		{sqlBlock("SELECT :id AS id"), false},
		{sqlBlock("SELECT :id AS id, :next AS next", "params = { next = args.id + 1 }"), true},
	} {
		h := db.mustCompile(t, tt.block, params)
		if got := h.Traits().ReadsEval; got != tt.want {
			t.Errorf("ReadsEval() = %v, want %v:\n%s", got, tt.want, tt.block)
		}
	}
}
