package sqladapter

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseQueryTranslates(t *testing.T) {
	tests := []struct {
		name    string
		d       dialect
		src     string
		want    string   // with {{slots}} rendered as <slot>
		binds   []string // params in driver order
		verb    string
		returns bool
	}{
		{"postgres numbers distinct names", postgres, "SELECT * FROM t WHERE a = :a AND b = :b OR a = :a",
			"SELECT * FROM t WHERE a = $1 AND b = $2 OR a = $1", []string{"a", "b"}, "SELECT", false},
		{"mysql binds each use", mysql, "SELECT * FROM t WHERE a = :a AND b = :b OR a = :a",
			"SELECT * FROM t WHERE a = ? AND b = ? OR a = ?", []string{"a", "b", "a"}, "SELECT", false},
		{"sqlite binds each use", sqlite, "select :x, :y",
			"select ?, ?", []string{"x", "y"}, "SELECT", false},
		{"postgres casts are not placeholders", postgres, "SELECT :id::bigint, created::date FROM t WHERE x = :x::text",
			"SELECT $1::bigint, created::date FROM t WHERE x = $2::text", []string{"id", "x"}, "SELECT", false},
		{"strings are skipped", sqlite, "SELECT ':notaparam', 'it''s :x', :y",
			"SELECT ':notaparam', 'it''s :x', ?", []string{"y"}, "SELECT", false},
		{"comments are skipped", postgres, "SELECT 1 -- :a\n/* :b /* nested :c */ :d */ + :e",
			"SELECT 1 -- :a\n/* :b /* nested :c */ :d */ + $1", []string{"e"}, "SELECT", false},
		{"quoted identifiers are skipped", postgres, `SELECT "a:b" FROM "t""x:y" WHERE c = :c`,
			`SELECT "a:b" FROM "t""x:y" WHERE c = $1`, []string{"c"}, "SELECT", false},
		{"mysql backticks and backslashes", mysql, "SELECT `a:b`, 'it\\'s :x', \"q\\\":y\" FROM t WHERE c = :c",
			"SELECT `a:b`, 'it\\'s :x', \"q\\\":y\" FROM t WHERE c = ?", []string{"c"}, "SELECT", false},
		{"mysql hash comment", mysql, "SELECT 1 # :a\n, :b",
			"SELECT 1 # :a\n, ?", []string{"b"}, "SELECT", false},
		{"mysql -- needs a space", mysql, "SELECT 1--:a\n",
			"SELECT 1--?\n", []string{"a"}, "SELECT", false},
		{"postgres E-string backslash", postgres, `SELECT E'it\'s :x', 'plain\' , :y`,
			`SELECT E'it\'s :x', 'plain\' , $1`, []string{"y"}, "SELECT", false},
		{"postgres dollar quotes", postgres, "SELECT $$ :a $$, $tag$ :b $x$ $tag$, :c",
			"SELECT $$ :a $$, $tag$ :b $x$ $tag$, $1", []string{"c"}, "SELECT", false},
		{"postgres jsonb ? operator", postgres, "SELECT doc ? 'k', doc ?| array['a'] FROM t WHERE id = :id",
			"SELECT doc ? 'k', doc ?| array['a'] FROM t WHERE id = $1", []string{"id"}, "SELECT", false},
		{"sqlite brackets", sqlite, "SELECT [a:b] FROM t WHERE c = :c",
			"SELECT [a:b] FROM t WHERE c = ?", []string{"c"}, "SELECT", false},
		{"mysql assignment and slices are SQL", mysql, "SELECT @n := 1, :v",
			"SELECT @n := 1, ?", []string{"v"}, "SELECT", false},
		{"postgres array slice with numbers", postgres, "SELECT arr[1:2] FROM t WHERE id = :id",
			"SELECT arr[1:2] FROM t WHERE id = $1", []string{"id"}, "SELECT", false},
		{"identifier slots", postgres, "SELECT * FROM t ORDER BY {{sort}} DESC, {{ other }} LIMIT :n",
			"SELECT * FROM t ORDER BY <sort> DESC, <other> LIMIT $1", []string{"n"}, "SELECT", false},
		{"slots inside strings are text", sqlite, "SELECT '{{x}}'",
			"SELECT '{{x}}'", nil, "SELECT", false},
		{"trailing semicolon and comment dropped", sqlite, "SELECT 1; -- done\n ;",
			"SELECT 1", nil, "SELECT", false},
		{"insert verb", mysql, "  insert INTO t (a) VALUES (:a)",
			"  insert INTO t (a) VALUES (?)", []string{"a"}, "INSERT", false},
		{"returning", postgres, "DELETE FROM t WHERE id = :id RETURNING id",
			"DELETE FROM t WHERE id = $1 RETURNING id", []string{"id"}, "DELETE", true},
		{"cte", postgres, "WITH x AS (SELECT 1) SELECT * FROM x",
			"WITH x AS (SELECT 1) SELECT * FROM x", nil, "WITH", false},
		{"mysql executable comments are SQL", mysql, "SELECT 1 /*!50001 , :a */ /*M! , :b */ /* :c */",
			"SELECT 1 /*!50001 , ? */ /*M! , ? */ /* :c */", []string{"a", "b"}, "SELECT", false},
		{"unicode text kept", sqlite, "SELECT 'héllo :x' AS «ü», :y",
			"SELECT 'héllo :x' AS «ü», ?", []string{"y"}, "SELECT", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, problems := parseQuery(tt.src, tt.d)
			if len(problems) > 0 {
				t.Fatalf("problems: %+v", problems)
			}
			got := q.sql(tt.d, func(name string) string { return name })
			want := tt.want
			for _, s := range q.idents {
				want = strings.Replace(want, "<"+s.name+">", tt.d.quoteIdent(s.name), 1)
			}
			if got != want {
				t.Errorf("sql:\n got %q\nwant %q", got, want)
			}
			if !reflect.DeepEqual(q.binds, tt.binds) {
				t.Errorf("binds = %q, want %q", q.binds, tt.binds)
			}
			if q.verb != tt.verb || q.returning != tt.returns {
				t.Errorf("verb, returning = %q, %v; want %q, %v", q.verb, q.returning, tt.verb, tt.returns)
			}
		})
	}
}

func TestParseQueryProblems(t *testing.T) {
	tests := []struct {
		name, src string
		d         dialect
		summary   string
		at        string // the text the problem points at
	}{
		{"positional ? in mysql", "SELECT * FROM t WHERE id = ?", mysql, "Positional placeholder", "?"},
		{"positional ? in sqlite", "SELECT ?", sqlite, "Positional placeholder", "?"},
		{"positional $1 in postgres", "SELECT * FROM t WHERE id = $12", postgres, "Positional placeholder", "$12"},
		{"sqlite @name", "SELECT @id", sqlite, "Native SQLite placeholder", "@id"},
		{"sqlite $name", "SELECT $id", sqlite, "Native SQLite placeholder", "$id"},
		{"two statements", "SELECT 1; DROP TABLE t", sqlite, "More than one statement", "DROP TABLE t"},
		{"two statements mysql", "SELECT 1;\n\nDELETE FROM t;", mysql, "More than one statement", "DELETE FROM t"},
		{"unterminated string", "SELECT 'abc", postgres, "Unterminated string literal", "'abc"},
		{"unterminated comment", "SELECT 1 /* x", sqlite, "Unterminated comment", "/* x"},
		{"unterminated nested comment", "SELECT 1 /* /* x */", postgres, "Unterminated comment", "/* /* x */"},
		{"unterminated dollar quote", "SELECT $f$ abc", postgres, "Unterminated dollar-quoted string", "$f$ abc"},
		{"unclosed slot", "SELECT {{x FROM t", sqlite, "Unclosed {{", "{{"},
		{"unterminated executable comment", "SELECT 1 /*! x", mysql, "Unterminated comment", "/*! x"},
		{"statement in an executable comment", "SELECT 1; /*! DELETE FROM t */", mysql, "More than one statement", "/*! DELETE FROM t */"},
		{"bad slot", "SELECT {{x-y}} FROM t", sqlite, "Invalid identifier slot", "{{x-y}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := parseQuery(tt.src, tt.d)
			if len(problems) != 1 {
				t.Fatalf("problems = %+v, want one", problems)
			}
			p := problems[0]
			if p.summary != tt.summary || tt.src[p.off:p.end] != tt.at {
				t.Errorf("problem %q at %q, want %q at %q", p.summary, tt.src[p.off:p.end], tt.summary, tt.at)
			}
		})
	}
}

func TestQuoteIdent(t *testing.T) {
	for _, tt := range []struct {
		d          dialect
		name, want string
	}{
		{postgres, "created_at", `"created_at"`},
		{sqlite, `we"ird`, `"we""ird"`},
		{mysql, "created_at", "`created_at`"},
		{mysql, "we`ird", "`we``ird`"},
	} {
		if got := tt.d.quoteIdent(tt.name); got != tt.want {
			t.Errorf("%s.quoteIdent(%q) = %s, want %s", tt.d, tt.name, got, tt.want)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM t WHERE a = :a", "'x' || :y", "E'\\'' :a", "$$ :a $$ :b", "$tag$ x $tag$", "SELECT 1; SELECT 2",
		"/* /* */ */ :a", "-- :a\n:b", "# :a\n:b", "`a:b` :c", "[a:b] :c", "{{x}} :y", "{{", "x::int :y::text", "?", "$1", "@a",
		"'", "\"", "`", "[", "/*", "$$", ":", "::", "{{ }}", "日本 :a '語'",
		"PRAGMA main.x = 1", "PRAGMA", "PRAGMA x.", "SELECT 1 /*!50000 INTO OUTFILE 'x' */", "/*M!", "INTO", "pg_read_file(", "\"set_config\"(",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, d := range []dialect{sqlite, postgres, mysql} {
			q, problems := parseQuery(src, d)
			for _, p := range problems {
				if p.off < 0 || p.off > p.end || p.end > len(src) {
					t.Fatalf("%s: problem %+v out of %q", d, p, src)
				}
			}
			for _, tok := range q.tokens {
				if tok.off < 0 || tok.off >= tok.end || tok.end > len(src) {
					t.Fatalf("%s: token %+v out of %q", d, tok, src)
				}
			}
			for _, p := range readOnlyProblems(q, d) {
				if p.off < 0 || p.off > p.end || p.end > len(src) {
					t.Fatalf("%s: read-only problem %+v out of %q", d, p, src)
				}
			}
			for _, r := range append(q.params, q.idents...) {
				if r.off < 0 || r.off > r.end || r.end > len(src) {
					t.Fatalf("%s: ref %+v out of %q", d, r, src)
				}
			}
			if len(problems) == 0 {
				// Every placeholder became one native placeholder.
				got := q.sql(d, func(string) string { return "x" })
				if d != postgres && strings.Count(got, "?") < len(q.binds) {
					t.Fatalf("%s: %q → %q binds %v", d, src, got, q.binds)
				}
			}
		}
	})
}
