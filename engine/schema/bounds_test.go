package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/schema"
)

// nest wraps inner in n levels of {"properties": {"x": ...}}.
func nestSchema(n int, inner string) string {
	return strings.Repeat(`{"type":"object","properties":{"x":`, n) + inner + strings.Repeat(`}}`, n)
}

// nestArgs is {"x": {"x": ... leaf}} n levels deep.
func nestArgs(n int, leaf string) string {
	return strings.Repeat(`{"x":`, n) + leaf + strings.Repeat(`}`, n)
}

func decodeSchema(t *testing.T, js string) map[string]any {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("test schema is not JSON: %v", err)
	}
	return s
}

// TestCompileRefusesUnboundedSchemas: a schema whose validation could
// recurse without end, or cost without bound, is refused when it is read,
// with the reason a counter can use; the schemas people write pass.
func TestCompileRefusesUnboundedSchemas(t *testing.T) {
	// anyOf of two copies, 12 levels: 4096 schemas for one value.
	diamond := `{"type":"object","$defs":{"l0":{"type":"string"}`
	for i := 1; i <= 12; i++ {
		diamond += fmt.Sprintf(`,"l%d":{"anyOf":[{"$ref":"#/$defs/l%d"},{"$ref":"#/$defs/l%d"}]}`, i, i-1, i-1)
	}
	diamond += `},"properties":{"v":{"$ref":"#/$defs/l12"}}}`
	var wide strings.Builder
	wide.WriteString(`{"type":"object","properties":{`)
	for i := range schema.MaxSchemaNodes {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"p%d":{"type":"string"}`, i)
	}
	wide.WriteString(`}}`)

	for _, tc := range []struct {
		name, schema string
		reason       string // "": accepted
		detail       string
	}{
		{"self reference at the root", `{"type":"object","$ref":"#"}`, "cycle", "(# → #)"},
		{"$defs cycle", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "cycle", "#/$defs/a → #/$defs/a"},
		{"two-step cycle through allOf", `{"type":"object","$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"properties":{"v":{"$ref":"#/$defs/a"}}}`, "cycle", "without descending"},
		{"cycle through not and if", `{"type":"object","$defs":{"a":{"not":{"if":{"$ref":"#/$defs/a"}}}},"properties":{"v":{"$ref":"#/$defs/a"}}}`, "cycle", ""},
		{"cycle through an anchor", `{"type":"object","$defs":{"a":{"$anchor":"A","oneOf":[{"$ref":"#A"}]}},"properties":{"v":{"$ref":"#A"}}}`, "cycle", ""},
		{"cycle through dependentSchemas", `{"type":"object","dependentSchemas":{"k":{"$ref":"#"}}}`, "cycle", ""},
		{"exponential anyOf", diamond, "expansion", "more than 1000 subschemas"},
		{"too deep", nestSchema(schema.MaxSchemaDepth/2+1, `{"type":"string"}`), "depth", "more than 128 levels"},
		{"too deep in an enum", `{"type":"object","properties":{"e":{"enum":[` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `]}}}`, "depth", ""},
		{"too many subschemas", wide.String(), "size", "more than 10000 subschemas"},
		{"remote reference", `{"type":"object","properties":{"v":{"$ref":"https://example.com/s.json"}}}`, "reference", "points outside the schema"},
		{"dangling reference", `{"type":"object","properties":{"v":{"$ref":"#/$defs/nope"}}}`, "reference", "does not name a subschema"},
		{"embedded resource", `{"type":"object","$defs":{"a":{"$id":"https://x/a","type":"string"}}}`, "reference", "its own $id"},

		// Accepted: recursion that descends into the value is bounded by
		// the value's depth.
		{"recursion through properties", `{"type":"object","properties":{"x":{"$ref":"#"}}}`, "", ""},
		{"tree of nodes", `{"type":"object","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"properties":{"root":{"$ref":"#/$defs/node"}}}`, "", ""},
		{"any JSON value", `{"type":"object","$defs":{"json":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"array","items":{"$ref":"#/$defs/json"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/json"}}]}},"properties":{"v":{"$ref":"#/$defs/json"}}}`, "", ""},
		{"escaped pointer", `{"type":"object","$defs":{"a/b":{"type":"string"},"c~d":{"type":"integer"}},"properties":{"v":{"$ref":"#/$defs/a~1b"},"w":{"$ref":"#/$defs/c~0d"}}}`, "", ""},
		{"root $id", `{"$id":"https://example.com/s","type":"object","$defs":{"a":{"type":"string"}},"properties":{"v":{"$ref":"https://example.com/s#/$defs/a"}}}`, "", ""},
		{"draft-07 definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"a":{"type":"string"}},"properties":{"v":{"$ref":"#/definitions/a"}}}`, "", ""},
		{"deep but within bounds", nestSchema(schema.MaxSchemaDepth/2-1, `{"type":"string"}`), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := decodeSchema(t, tc.schema)
			_, err := schema.Compile(s)
			checkErr := schema.CheckBounds(s)
			if tc.reason == "" {
				if err != nil || checkErr != nil {
					t.Fatalf("Compile: %v; CheckBounds: %v; want both to accept", err, checkErr)
				}
				return
			}
			be, ok := schema.IsBoundsError(err)
			if !ok {
				t.Fatalf("Compile: %v; want a *BoundsError (%s)", err, tc.reason)
			}
			if be.Reason != tc.reason || !strings.Contains(be.Detail, tc.detail) {
				t.Errorf("Compile: reason %q, %q; want %q containing %q", be.Reason, be.Detail, tc.reason, tc.detail)
			}
			if checkErr == nil || checkErr.Error() != err.Error() {
				t.Errorf("CheckBounds: %v; want the same error as Compile", checkErr)
			}
			if _, err := schema.CompileOutput(s); err == nil {
				t.Errorf("CompileOutput accepted it")
			}
		})
	}
}

// TestValidateBounds: arguments deeper than MaxArgumentDepth are a tool
// error naming where, whatever the schema; a schema whose checks multiply
// with the depth of the value is stopped by the work bound, in time.
func TestValidateBounds(t *testing.T) {
	recursive := `{"type":"object","properties":{"x":{"$ref":"#"}}}`
	plain := `{"type":"object","properties":{"x":{"type":"object"}}}`
	// Each level checks the value twice: 2^depth checks.
	branching := `{"type":"object","$defs":{"t":{"anyOf":[{"type":"object","properties":{"x":{"$ref":"#/$defs/t"}}},{"type":"object","properties":{"x":{"$ref":"#/$defs/t"}}}]}},"properties":{"x":{"$ref":"#/$defs/t"}}}`
	var enum []string
	for i := range 10_000 {
		enum = append(enum, fmt.Sprint(i))
	}
	// Each check of an item compares it with 10,000 values.
	bigEnum := `{"type":"object","$defs":{"e":{"enum":[` + strings.Join(enum, ",") + `]}},"properties":{"a":{"type":"array","items":{"$ref":"#/$defs/e"}}}}`
	items := func(n int) string { return `{"a":[` + strings.TrimSuffix(strings.Repeat("9999,", n), ",") + `]}` }
	for _, tc := range []struct {
		name, schema, args string
		want               string // "": valid
	}{
		{"big enum, few items", bigEnum, items(10), ""},
		{"big enum, many items", bigEnum, items(100), "too large to check"},
		{"recursive, within the bound", recursive, nestArgs(schema.MaxArgumentDepth, `{}`), ""},
		{"recursive, too deep", recursive, nestArgs(schema.MaxArgumentDepth+1, `1`), `is nested more than 64 levels deep`},
		{"recursive, far too deep", recursive, nestArgs(5000, `1`), `argument "x.x.x`},
		{"recursive, too deep in an array", recursive, `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, `argument "x[0][0]`},
		{"compiled schema, too deep", plain, nestArgs(schema.MaxArgumentDepth+1, `1`), `send flatter arguments`},
		{"compiled schema, within the bound", plain, nestArgs(schema.MaxArgumentDepth, `{}`), ""},
		{"branching, shallow", branching, nestArgs(8, `{}`), ""},
		{"branching, deep", branching, nestArgs(40, `{}`), "too large to check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := mustCompile(t, tc.schema)
			start := time.Now()
			_, err := v.Validate(json.RawMessage(tc.args))
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Validate took %s", took)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v; want valid", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestCompileOutputBounds: an output schema's checks are bounded in work;
// a result deeper than arguments may be is still checked.
func TestCompileOutputBounds(t *testing.T) {
	out, err := schema.CompileOutput(decodeSchema(t, `{"type":"object","properties":{"x":{"$ref":"#"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var deep any
	if err := json.Unmarshal([]byte(nestArgs(200, `{}`)), &deep); err != nil {
		t.Fatal(err)
	}
	if err := out.Validate(deep); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	branching, err := schema.CompileOutput(decodeSchema(t, `{"type":"object","$defs":{"t":{"anyOf":[{"type":"object","properties":{"x":{"$ref":"#/$defs/t"}}},{"type":"object","properties":{"x":{"$ref":"#/$defs/t"}}}]}},"properties":{"x":{"$ref":"#/$defs/t"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(nestArgs(40, `{}`)), &deep); err != nil {
		t.Fatal(err)
	}
	if err := branching.Validate(deep); !errors.Is(err, schema.ErrTooMuchWork) {
		t.Fatalf("Validate: %v; want ErrTooMuchWork", err)
	}
}

// A form (an elicitation's requestedSchema) is checked like any schema,
// and takes no references.
func TestCheckForm(t *testing.T) {
	for _, tc := range []struct {
		form string
		want string // "": accepted
	}{
		{`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name"]}`, ""},
		{`{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "without descending"},
		{`{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"name":{"$ref":"#/$defs/s"}}}`, "a form takes no references ($ref at #/properties/name)"},
		{`{"type":"object","$dynamicAnchor":"n","properties":{"x":{"$dynamicRef":"#n"}}}`, "a form takes no references ($dynamicRef"},
	} {
		err := schema.CheckForm(decodeSchema(t, tc.form))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckForm(%s) = %v, want %q", tc.form, err, tc.want)
		}
	}
}
