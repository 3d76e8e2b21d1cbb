package importer

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

func TestSnake(t *testing.T) {
	tests := []struct{ in, want string }{
		{"listPets", "list_pets"},
		{"ListPets", "list_pets"},
		{"getHTTPServer", "get_http_server"},
		{"find pet by id", "find_pet_by_id"},
		{"issues/list-for-repo", "issues_list_for_repo"},
		{"X-Request-ID", "x_request_id"},
		{"v2Api", "v2_api"},
		{"__weird__", "weird"},
		{"ünïcode", "n_code"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Snake(tt.in); got != tt.want {
			t.Errorf("Snake(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIdent(t *testing.T) {
	for in, want := range map[string]string{"3d": "_3d", "": "fallback", "$$": "fallback", "ok": "ok"} {
		if got := Ident(in, "fallback"); got != want {
			t.Errorf("Ident(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNamer(t *testing.T) {
	n := NewNamer(10)
	n.Reserve("taken")
	got := []string{n.Unique("taken"), n.Unique("a_very_long_name"), n.Unique("a_very_long_name"), n.Unique("x"), n.Unique("x")}
	want := []string{"taken_2", "a_very_lon", "a_very_l_2", "x", "x_2"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("name %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestEnvName(t *testing.T) {
	if got := EnvName("Swagger Petstore", "api_key"); got != "SWAGGER_PETSTORE_API_KEY" {
		t.Errorf("EnvName = %q", got)
	}
}

// TestTemplate checks that text written into a template is escaped as HCL
// wants it: quotes, backslashes, and the template introducers ${ and %{,
// which would otherwise be read as interpolation.
func TestTemplate(t *testing.T) {
	f := hclwrite.NewEmptyFile()
	f.Body().SetAttributeRaw("a", Template(Part{Text: `say "hi" \ ${x} %{if}`}, Part{Expr: Args("name")}, Part{Text: "\n"}))
	f.Body().SetAttributeRaw("b", Object([]Field{{Name: "X-Key", Value: Env("KEY")}, {Name: "ok", Value: Lit(1)}}))
	f.Body().SetAttributeRaw("c", Tokens(map[string]any{"z": 1.5, "type": "object", "a b": []any{true, nil}}))
	want := `a = "say \"hi\" \\ $${x} %%{if}${args.name}\n"
b = {
  X-Key = env("KEY")
  ok    = 1
}
c = {
  type  = "object"
  "a b" = [true, null]
  z     = 1.5
}
`
	if got := string(Format(f)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestPrune(t *testing.T) {
	src := []byte("# header\n\ntool \"a\" {\n  description = \"fine\"\n}\n\ntool \"b\" {\n  description = 1\n}\n\ntool \"c\" {\n}\n")
	errs := hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Bad", Detail: "description must be a string", Subject: &hcl.Range{Start: hcl.Pos{Line: 8}, End: hcl.Pos{Line: 8}}}}
	got, removed := Prune(src, errs)
	want := "# header\n\ntool \"a\" {\n  description = \"fine\"\n}\n\ntool \"c\" {\n}\n"
	if string(got) != want || len(removed) != 1 || removed[0] != `tool "b" left out: mcpd refused it: Bad: description must be a string` {
		t.Errorf("got %q, %q", got, removed)
	}
	if _, removed := Prune(src, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "no place"}}); removed != nil {
		t.Errorf("an error without a place removed %v", removed)
	}
}
