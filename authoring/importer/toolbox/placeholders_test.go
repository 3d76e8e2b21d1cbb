package toolbox

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"
)

func TestRewritePlaceholders(t *testing.T) {
	tests := []struct {
		name, sql, dialect string
		params             []string
		want, err          string
	}{
		{"postgres numbered", "SELECT * FROM t WHERE a = $1 AND b = $2", "postgres", []string{"a", "b"}, "SELECT * FROM t WHERE a = :a AND b = :b", ""},
		{"postgres reused and out of order", "SELECT $2, $1, $2", "postgres", []string{"a", "b"}, "SELECT :b, :a, :b", ""},
		{"postgres strings and comments kept", "SELECT '$1', \"$1\", $$ $1 $$, $q$ $1 $q$ -- $1\n, $1 /* $1 */", "postgres", []string{"a"}, "SELECT '$1', \"$1\", $$ $1 $$, $q$ $1 $q$ -- $1\n, :a /* $1 */", ""},
		{"postgres ? is an operator", "SELECT doc ? 'k' FROM t WHERE id = $1", "postgres", []string{"id"}, "SELECT doc ? 'k' FROM t WHERE id = :id", ""},
		{"postgres cast kept", "SELECT $1::text", "postgres", []string{"a"}, "SELECT :a::text", ""},
		{"postgres too few params", "SELECT $3", "postgres", []string{"a"}, "", "placeholder $3 has no parameter (the tool declares 1)"},
		{"mysql in order", "SELECT * FROM t WHERE a = ? AND b = ?", "mysql", []string{"a", "b"}, "SELECT * FROM t WHERE a = :a AND b = :b", ""},
		{"mysql quoted ? kept", "SELECT '?', `?`, \"it\\'s ?\" FROM t WHERE a = ?", "mysql", []string{"a"}, "SELECT '?', `?`, \"it\\'s ?\" FROM t WHERE a = :a", ""},
		{"mysql too many ?", "SELECT ?, ?", "mysql", []string{"a"}, "", "the statement has more ? placeholders than the tool's 1 parameters"},
		{"sqlite ? and $N", "SELECT ? , $1", "sqlite", []string{"a"}, "SELECT :a , :a", ""},
		{"sqlite ?NNN", "SELECT ?2, ?1, ?2", "sqlite", []string{"a", "b"}, "SELECT :b, :a, :b", ""},
		{"a colon word would be a placeholder", "SELECT * FROM t WHERE a = :b", "sqlite", nil, "", `the statement holds ":b", which mcpd would read as a named placeholder`},
		{"array slice is not", "SELECT arr[1:2] FROM t", "postgres", nil, "SELECT arr[1:2] FROM t", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rewritePlaceholders(tt.sql, tt.dialect, tt.params)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestBodyTemplate(t *testing.T) {
	args := map[string]string{"age": "age", "name": "name", "tags": "tags"}
	tests := []struct{ tmpl, want, err string }{
		{`{"age": {{.age}}, "name": "{{.name}}"}`, "{\n  age  = args.age\n  name = args.name\n}", ""},
		{`{"greeting": "Hello {{.name}}, \"{{ .age }}\"", "tags": {{json .tags}}}`, "{\n  greeting = \"Hello ${args.name}, \\\"${args.age}\\\"\"\n  tags     = args.tags\n}", ""},
		{`[{{.age}}, "x"]`, `[args.age, "x"]`, ""},
		{`{"a": {{.nope}}}`, "", "{{.nope}} names no parameter"},
		{`{"a": {{if .age}}1{{end}}}`, "", "it uses template actions other than {{.name}} and {{json .name}}"},
		{`name={{.name}}`, "", "with its parameters in place it is not JSON: invalid character 'a' in literal null (expecting 'u')"},
	}
	for _, tt := range tests {
		got, err := bodyTemplate(tt.tmpl, args)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s: error %v, want %q", tt.tmpl, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.tmpl, err)
			continue
		}
		f := hclwrite.NewEmptyFile()
		f.Body().SetAttributeRaw("body", got)
		if s := strings.TrimPrefix(strings.TrimSpace(string(hclwrite.Format(f.Bytes()))), "body = "); s != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.tmpl, s, tt.want)
		}
	}
}
