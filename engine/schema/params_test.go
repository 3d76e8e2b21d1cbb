package schema_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/schema"
)

// paramsOf loads the params of the one tool declared by body.
func paramsOf(t *testing.T, body string) ([]*config.Param, *hcl.EvalContext) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.hcl")
	src := "tool \"t\" {\n  description = \"test\"\n" + body + "\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.Load([]string{path}, config.Blocks{})
	if diags.HasErrors() {
		t.Fatalf("loading params: %s", diags.Error())
	}
	return cfg.Tools[0].Params, &hcl.EvalContext{Functions: funcs.Table(dir)}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonEqual(t *testing.T, got any, want string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(asJSON(t, got)), &g); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("schema mismatch\n got: %s\nwant: %s", asJSON(t, got), want)
	}
}

func TestFromParamsShape(t *testing.T) {
	params, ectx := paramsOf(t, `
  param "city" {
    description = "City name"
    min_length  = 1
    max_length  = 64
    pattern     = "^[A-Za-z ]+$"
    examples    = ["Paris"]
  }
  param "days" {
    type              = "integer"
    title             = "Days"
    minimum           = 1
    maximum           = 14
    default           = 3
  }
  param "ratio" {
    type              = "number"
    exclusive_minimum = 0
    exclusive_maximum = 1
    required          = false
  }
  param "units" {
    type = "string"
    enum = ["metric", "imperial"]
  }
  param "note" {
    type     = "string"
    nullable = true
    format   = "email"
  }
  param "tags" {
    type         = "array"
    unique_items = true
    min_items    = 1
    max_items    = 5
    items = {
      type       = "string"
      max_length = 10
    }
  }
  param "where" {
    type = "object"
    properties = {
      first_name = {
        type       = "string"
        min_length = 2
      }
      zip_codes = {
        type = "array"
        items = {
          type       = "string"
          max_length = 5
        }
      }
    }
  }
  param "flag" {
    type     = "boolean"
    required = true
  }`)
	got, diags := schema.FromParams(params, ectx)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	jsonEqual(t, got, `{
	  "type": "object",
	  "additionalProperties": false,
	  "required": ["city", "units", "note", "tags", "where", "flag"],
	  "properties": {
	    "city":  {"type": "string", "description": "City name", "minLength": 1, "maxLength": 64, "pattern": "^[A-Za-z ]+$", "examples": ["Paris"]},
	    "days":  {"type": "integer", "title": "Days", "minimum": 1, "maximum": 14, "default": 3},
	    "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
	    "units": {"type": "string", "enum": ["metric", "imperial"]},
	    "note":  {"type": ["string", "null"], "format": "email"},
	    "tags":  {"type": "array", "uniqueItems": true, "minItems": 1, "maxItems": 5, "items": {"type": "string", "maxLength": 10}},
	    "where": {"type": "object", "properties": {
	      "first_name": {"type": "string", "minLength": 2},
	      "zip_codes":  {"type": "array", "items": {"type": "string", "maxLength": 5}}
	    }},
	    "flag":  {"type": "boolean"}
	  }
	}`)

	// The schema it builds compiles and validates with the params' rules,
	// including the snake_case keywords converted inside items and
	// properties.
	v, err := schema.Compile(got)
	if err != nil {
		t.Fatal(err)
	}
	base := `"city": "Paris", "units": "metric", "note": null, "tags": ["a"], "flag": true`
	for _, tc := range []struct{ args, want string }{
		{`{` + base + `, "where": {}}`, ""},
		{`{` + base + `, "where": {"first_name": "A"}}`, `argument "where.first_name" must be at least 2 characters long, got 1`},
		{`{` + base + `, "where": {"zip_codes": ["12345", "123456"]}}`, `argument "where.zip_codes[1]" must be at most 5 characters long, got 6`},
		{`{"city": "Paris", "units": "metric", "note": null, "tags": ["a", "a"], "flag": true, "where": {}}`, `argument "tags" must not repeat items: items 0 and 1 are equal`},
	} {
		_, err := v.Validate(json.RawMessage(tc.args))
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.want {
			t.Errorf("Validate(%s)\n got: %s\nwant: %s", tc.args, gotErr, tc.want)
		}
	}
	args, err := v.Validate(json.RawMessage(`{` + base + `, "where": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if args["days"] != int64(3) {
		t.Errorf("default of days not applied: %v", args["days"])
	}
}

func TestFromParamsNoParams(t *testing.T) {
	got, diags := schema.FromParams(nil, nil)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	jsonEqual(t, got, `{"type": "object", "properties": {}, "additionalProperties": false}`)
	v, err := schema.Compile(got)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(json.RawMessage(`{"x": 1}`)); err == nil || err.Error() != `unknown argument "x"; this tool takes no arguments` {
		t.Errorf("got %v", err)
	}
}

// Each diagnostic points at the attribute whose value is wrong.
func TestFromParamsDiagnostics(t *testing.T) {
	tests := []struct {
		name, body string
		wantPos    string // line:col inside the generated file
		want       string
	}{
		{"bad pattern", "  param \"p\" {\n    pattern = \"(\"\n  }", "4:15", "missing closing )"},
		{"pattern not a string", "  param \"p\" {\n    pattern = 3\n  }", "4:15", "pattern must be a string"},
		{"default below minimum", "  param \"p\" {\n    type    = \"integer\"\n    minimum = 5\n    default = 1\n  }", "6:15", `argument "p" must be at least 5, got 1`},
		{"default of the wrong type", "  param \"p\" {\n    type    = \"integer\"\n    default = \"x\"\n  }", "5:15", `argument "p" must be an integer, got string "x"`},
		{"enum of the wrong type", "  param \"p\" {\n    type = \"integer\"\n    enum = [1, \"two\"]\n  }", "5:12", `argument "p" must be an integer, got string "two"`},
		{"enum outside maximum", "  param \"p\" {\n    type    = \"integer\"\n    maximum = 3\n    enum    = [1, 5]\n  }", "6:15", `must be at most 3, got 5`},
		{"required with default", "  param \"p\" {\n    required = true\n    default  = \"x\"\n  }", "5:5", `param "p" has a default, so it cannot be required`},
		{"unknown function", "  param \"p\" {\n    default = nope(\"x\")\n  }", "4:15", `Call to unknown function`},
		{"items not a schema", "  param \"p\" {\n    type  = \"array\"\n    items = \"string\"\n  }", "3:3", `a schema must be an object, got string`},
		{"negative min_length", "  param \"p\" {\n    min_length = -1\n  }", "3:3", `minLength must be a whole number ≥ 0`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params, ectx := paramsOf(t, tc.body)
			_, diags := schema.FromParams(params, ectx)
			if !diags.HasErrors() {
				t.Fatal("want an error")
			}
			var got []string
			for _, d := range diags {
				pos := ""
				if d.Subject != nil {
					pos = strings.TrimPrefix(config.Pos(*d.Subject), d.Subject.Filename+":")
				}
				got = append(got, pos+" "+d.Summary+": "+d.Detail)
				if pos == tc.wantPos && strings.Contains(d.Summary+": "+d.Detail, tc.want) {
					return
				}
			}
			t.Errorf("want a diagnostic at %s containing %q; got:\n%s", tc.wantPos, tc.want, strings.Join(got, "\n"))
		})
	}
}
