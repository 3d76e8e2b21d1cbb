package schema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/schema"
)

// mustCompile compiles a schema written as JSON.
func mustCompile(t testing.TB, js string) *schema.Validator {
	t.Helper()
	// Numbers exact, as JSONValue reads an input_schema.
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("test schema is not JSON: %v", err)
	}
	v, err := schema.Compile(exact(s).(map[string]any))
	if err != nil {
		t.Fatalf("Compile(%s): %v", js, err)
	}
	return v
}

func exact(x any) any {
	switch v := x.(type) {
	case json.Number:
		n, err := schema.Number(string(v))
		if err != nil {
			panic(err)
		}
		return n
	case []any:
		for i := range v {
			v[i] = exact(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = exact(v[k])
		}
	}
	return x
}

// A schema exercising every keyword the compiled validator implements.
const richSchema = `{
  "type": "object",
  "properties": {
    "name":    {"type": "string", "minLength": 2, "maxLength": 5},
    "code":    {"type": "string", "pattern": "^[A-Z]{3}$"},
    "count":   {"type": "integer", "minimum": 1, "maximum": 10},
    "ratio":   {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "step":    {"type": "number", "multipleOf": 0.5},
    "color":   {"type": "string", "enum": ["red", "green"]},
    "flag":    {"type": "boolean"},
    "kind":    {"const": "fixed"},
    "tags":    {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1, "maxItems": 4, "uniqueItems": true},
    "address": {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["zip"], "additionalProperties": false},
    "labels":  {"type": "object", "additionalProperties": {"type": "integer"}},
    "maybe":   {"type": ["string", "null"]},
    "when":    {"type": "string", "format": "date-time"},
    "day":     {"type": "string", "format": "date"},
    "at":      {"type": "string", "format": "time"},
    "mail":    {"type": "string", "format": "email"},
    "link":    {"type": "string", "format": "uri"},
    "id":      {"type": "string", "format": "uuid"},
    "ip4":     {"type": "string", "format": "ipv4"},
    "ip6":     {"type": "string", "format": "ipv6"},
    "other":   {"type": "string", "format": "x-unknown-format"}
  },
  "required": ["name"],
  "additionalProperties": false
}`

func TestValidateMessages(t *testing.T) {
	v := mustCompile(t, richSchema)
	tests := []struct {
		name string
		args string
		want string // "" means valid; otherwise the exact error message
	}{
		{"valid minimal", `{"name": "ab"}`, ""},
		{"absent arguments count as {}", ``, `missing required argument "name"`},
		{"null arguments count as {}", `null`, `missing required argument "name"`},
		{"not an object", `[1]`, `arguments must be a JSON object, got array`},
		{"not JSON", `{"name":`, `arguments are not valid JSON: unexpected end of JSON input`},
		{"missing required", `{}`, `missing required argument "name"`},
		{"unknown argument", `{"name": "ab", "zzz": "x"}`, `unknown argument "zzz"; this tool takes "address", "at", "code", "color", "count", "day", "flag", "id", "ip4", "ip6", "kind", "labels", "link", "mail", "maybe", "name", "other", "ratio", "step", "tags", "when"`},
		{"misspelt argument", `{"name": "ab", "cuont": 1}`, `unknown argument "cuont" (did you mean "count"?); this tool takes "address", "at", "code", "color", "count", "day", "flag", "id", "ip4", "ip6", "kind", "labels", "link", "mail", "maybe", "name", "other", "ratio", "step", "tags", "when"`},
		{"misspelt required argument", `{"nmae": "ab"}`, `unknown argument "nmae" (did you mean "name"?); this tool takes "address", "at", "code", "color", "count", "day", "flag", "id", "ip4", "ip6", "kind", "labels", "link", "mail", "maybe", "name", "other", "ratio", "step", "tags", "when"; and missing required argument "name"`},
		{"every problem", `{"name": 1, "count": 0}`, `argument "count" must be at least 1, got 0; and argument "name" must be a string, got integer 1`},
		{"nested misspelt property", `{"name": "ab", "address": {"zipp": "12345"}}`, `argument "address" has an unknown property "zipp" (did you mean "zip"?); allowed: "zip"; and argument "address" is missing required property "zip"`},
		{"wrong type", `{"name": 42}`, `argument "name" must be a string, got integer 42`},
		{"integer given 1.5", `{"name": "ab", "count": 1.5}`, `argument "count" must be an integer, got number 1.5`},
		{"integer given 2.0", `{"name": "ab", "count": 2.0}`, ""},
		{"integer given a string", `{"name": "ab", "count": "3"}`, `argument "count" must be an integer, got string "3"`},
		{"below minimum", `{"name": "ab", "count": 0}`, `argument "count" must be at least 1, got 0`},
		{"at minimum", `{"name": "ab", "count": 1}`, ""},
		{"above maximum", `{"name": "ab", "count": 11}`, `argument "count" must be at most 10, got 11`},
		{"at exclusive minimum", `{"name": "ab", "ratio": 0}`, `argument "ratio" must be greater than 0, got 0`},
		{"at exclusive maximum", `{"name": "ab", "ratio": 1}`, `argument "ratio" must be less than 1, got 1`},
		{"inside exclusive range", `{"name": "ab", "ratio": 0.5}`, ""},
		{"multipleOf", `{"name": "ab", "step": 1.25}`, `argument "step" must be a multiple of 0.5, got 1.25`},
		{"multipleOf ok", `{"name": "ab", "step": 2.5}`, ""},
		{"too short", `{"name": "a"}`, `argument "name" must be at least 2 characters long, got 1`},
		{"too long", `{"name": "abcdef"}`, `argument "name" must be at most 5 characters long, got 6`},
		// Lengths count characters, not bytes: "héllo" is 6 bytes, "日本" 6.
		{"unicode within maxLength", `{"name": "héllo"}`, ""},
		{"unicode within minLength", `{"name": "日本"}`, ""},
		{"unicode over maxLength", `{"name": "日本語日本語"}`, `argument "name" must be at most 5 characters long, got 6`},
		{"emoji is one character", `{"name": "a😀"}`, ""},
		{"pattern", `{"name": "ab", "code": "abc"}`, `argument "code" must match the pattern ^[A-Z]{3}$, got "abc"`},
		{"pattern ok", `{"name": "ab", "code": "ABC"}`, ""},
		{"enum", `{"name": "ab", "color": "blue"}`, `argument "color" must be one of "red", "green", got "blue"`},
		{"enum ok", `{"name": "ab", "color": "green"}`, ""},
		{"const", `{"name": "ab", "kind": "other"}`, `argument "kind" must be "fixed"`},
		{"boolean", `{"name": "ab", "flag": "true"}`, `argument "flag" must be a boolean, got string "true"`},
		{"array items nested path", `{"name": "ab", "tags": ["a", "b", "long"]}`, `argument "tags[2]" must be at most 3 characters long, got 4`},
		{"array item type", `{"name": "ab", "tags": ["a", 7]}`, `argument "tags[1]" must be a string, got integer 7`},
		{"minItems", `{"name": "ab", "tags": []}`, `argument "tags" must have at least 1 items, got 0`},
		{"maxItems", `{"name": "ab", "tags": ["a", "b", "c", "d", "e"]}`, `argument "tags" must have at most 4 items, got 5`},
		{"uniqueItems", `{"name": "ab", "tags": ["a", "b", "a"]}`, `argument "tags" must not repeat items: items 0 and 2 are equal`},
		{"nested required", `{"name": "ab", "address": {}}`, `argument "address" is missing required property "zip"`},
		{"nested property path", `{"name": "ab", "address": {"zip": "1234"}}`, `argument "address.zip" must match the pattern ^[0-9]{5}$, got "1234"`},
		{"nested unknown property", `{"name": "ab", "address": {"zip": "12345", "city": "x"}}`, `argument "address" has an unknown property "city"; allowed: "zip"`},
		{"additionalProperties schema", `{"name": "ab", "labels": {"a": 1, "b": "two"}}`, `argument "labels.b" must be an integer, got string "two"`},
		{"additionalProperties ok", `{"name": "ab", "labels": {"a": 1, "b": 2}}`, ""},
		{"null where nullable", `{"name": "ab", "maybe": null}`, ""},
		{"null where not nullable", `{"name": null}`, `argument "name" must be a string, got null`},
		{"nullable still typed", `{"name": "ab", "maybe": 3}`, `argument "maybe" must be null or a string, got integer 3`},
		{"date-time ok", `{"name": "ab", "when": "2026-01-02T15:04:05Z"}`, ""},
		{"date-time bad", `{"name": "ab", "when": "yesterday"}`, `argument "when" must be an RFC 3339 date-time such as 2026-01-02T15:04:05Z: parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{"date ok", `{"name": "ab", "day": "2026-02-28"}`, ""},
		{"date bad", `{"name": "ab", "day": "2026-02-30"}`, `argument "day" must be a date such as 2026-01-02: parsing time "2026-02-30": day out of range`},
		{"time ok", `{"name": "ab", "at": "15:04:05"}`, ""},
		{"time with zone ok", `{"name": "ab", "at": "15:04:05+02:00"}`, ""},
		{"email ok", `{"name": "ab", "mail": "a@example.com"}`, ""},
		{"email bad", `{"name": "ab", "mail": "not-an-address"}`, `argument "mail" must be an email address: mail: missing '@' or angle-addr`},
		{"uri ok", `{"name": "ab", "link": "https://example.com/x"}`, ""},
		{"uri without scheme", `{"name": "ab", "link": "/relative"}`, `argument "link" must be an absolute URI: missing scheme`},
		{"uuid ok", `{"name": "ab", "id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}`, ""},
		{"uuid bad", `{"name": "ab", "id": "nope"}`, `argument "id" must be a UUID: invalid UUID length: 4`},
		{"ipv4 ok", `{"name": "ab", "ip4": "192.0.2.1"}`, ""},
		{"ipv4 given ipv6", `{"name": "ab", "ip4": "::1"}`, `argument "ip4" must be a valid ipv4: not an IPv4 address`},
		{"ipv6 ok", `{"name": "ab", "ip6": "2001:db8::1"}`, ""},
		{"ipv6 given ipv4", `{"name": "ab", "ip6": "192.0.2.1"}`, `argument "ip6" must be a valid ipv6: not an IPv6 address`},
		{"unknown format is an annotation", `{"name": "ab", "other": "anything"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Validate(json.RawMessage(tc.args))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate(%s)\n got: %s\nwant: %s", tc.args, got, tc.want)
			}
		})
	}
}

// The first error reported must not depend on map iteration order, so that a
// model retrying a call sees the same message.
func TestValidateFirstErrorIsStable(t *testing.T) {
	v := mustCompile(t, richSchema)
	args := `{"name": 1, "count": "x", "color": 3, "tags": 4, "zzz": 1, "aaa": 2}`
	_, first := v.Validate(json.RawMessage(args))
	if first == nil {
		t.Fatal("want an error")
	}
	for range 50 {
		_, err := v.Validate(json.RawMessage(args))
		if err == nil || err.Error() != first.Error() {
			t.Fatalf("error changed between calls: %v, then %v", first, err)
		}
	}
}

func TestValidateAppliesDefaults(t *testing.T) {
	v := mustCompile(t, `{
	  "type": "object",
	  "properties": {
	    "greeting": {"type": "string", "default": "hello"},
	    "opts": {
	      "type": "object",
	      "default": {},
	      "properties": {
	        "unit":  {"type": "string", "default": "celsius"},
	        "depth": {"type": "object", "default": {"level": 1}}
	      }
	    }
	  }
	}`)
	got, err := v.Validate(json.RawMessage(`{"opts": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got["greeting"] != "hello" {
		t.Errorf("top-level default not applied: %v", got)
	}
	opts, _ := got["opts"].(map[string]any)
	if opts["unit"] != "celsius" {
		t.Errorf("nested default not applied: %v", got)
	}
	depth, _ := opts["depth"].(map[string]any)
	if depth["level"] != int64(1) {
		t.Errorf("nested object default not applied: %v", got)
	}

	// A given value wins over the default.
	got, err = v.Validate(json.RawMessage(`{"greeting": "hi", "opts": {"unit": "kelvin"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got["greeting"] != "hi" || got["opts"].(map[string]any)["unit"] != "kelvin" {
		t.Errorf("defaults overrode given values: %v", got)
	}

	// Defaults are copied per call: a handler that changes its arguments
	// must not change the next call's defaults.
	got, _ = v.Validate(nil)
	got["opts"].(map[string]any)["depth"].(map[string]any)["level"] = 99
	got, _ = v.Validate(nil)
	if lvl := got["opts"].(map[string]any)["depth"].(map[string]any)["level"]; lvl != int64(1) {
		t.Errorf("a call's change leaked into the default: level = %v", lvl)
	}
}

func TestCompileRejects(t *testing.T) {
	tests := []struct {
		schema string
		want   string
	}{
		{`{"type": "string"}`, `the root of an input schema must have "type": "object"`},
		{`{"properties": {}}`, `the root of an input schema must have "type": "object"`},
		{`{"type": "object", "properties": {"a": {"type": "text"}}}`, `schema of a: unknown type "text"`},
		{`{"type": "object", "properties": {"a": {"enum": []}}}`, `schema of a: enum must be a non-empty list`},
		{`{"type": "object", "properties": {"a": {"pattern": "("}}}`, `schema of a: invalid pattern "("`},
		{`{"type": "object", "properties": {"a": {"minLength": -1}}}`, `schema of a: minLength must be a whole number ≥ 0`},
		{`{"type": "object", "properties": {"a": {"maxItems": 1.5}}}`, `schema of a: maxItems must be a whole number ≥ 0`},
		{`{"type": "object", "properties": {"a": {"multipleOf": 0}}}`, `schema of a: multipleOf must be greater than 0`},
		{`{"type": "object", "properties": {"a": {"minimum": "1"}}}`, `schema of a: minimum must be a number`},
		{`{"type": "object", "properties": {"a": {"type": "integer", "minimum": 5, "default": 1}}}`, `the default of a does not satisfy its own schema: argument "a" must be at least 5, got 1`},
		{`{"type": "object", "properties": {"a": false}}`, `schema of a: the schema false accepts nothing`},
		{`{"type": "object", "required": "a"}`, `schema: required must be a list of names`},
		// The fallback validator is used for $ref and friends; a broken
		// reference is still a compile error.
		{`{"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}`, `invalid JSON Schema`},
	}
	for _, tc := range tests {
		var s map[string]any
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			t.Fatal(err)
		}
		_, err := schema.Compile(s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compile(%s) = %v, want an error containing %q", tc.schema, err, tc.want)
		}
	}
}

// Schemas with keywords outside the compiled set ($ref, $defs, anyOf, ...)
// are validated by the SDK's validator, with top-level defaults still
// applied.
func TestValidateFallback(t *testing.T) {
	v := mustCompile(t, `{
	  "$schema": "https://json-schema.org/draft/2020-12/schema",
	  "type": "object",
	  "$defs": {
	    "point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"], "additionalProperties": false}
	  },
	  "properties": {
	    "at":    {"$ref": "#/$defs/point"},
	    "id":    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
	    "units": {"type": "string", "default": "metric"}
	  },
	  "required": ["at"],
	  "additionalProperties": false
	}`)
	tests := []struct {
		name    string
		args    string
		wantErr string
	}{
		{"valid", `{"at": {"x": 1, "y": 2}, "id": "a"}`, ""},
		{"anyOf second branch", `{"at": {"x": 1, "y": 2}, "id": 7}`, ""},
		{"anyOf no branch", `{"at": {"x": 1, "y": 2}, "id": true}`, "/properties/id: anyOf"},
		{"ref violated", `{"at": {"x": 1}}`, `/properties/at: validating /$defs/point: required: missing properties: ["y"]`},
		{"ref wrong type", `{"at": {"x": "1", "y": 2}}`, `/$defs/point/properties/x: type: 1 has type "string", want "number"`},
		{"missing required", `{}`, `required: missing properties: ["at"]`},
		{"unknown argument", `{"at": {"x": 1, "y": 2}, "zzz": 1}`, `unexpected additional properties ["zzz"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Validate(json.RawMessage(tc.args))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(%s): %v", tc.args, err)
				}
				if got["units"] != "metric" {
					t.Errorf("top-level default not applied on the fallback path: %v", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate(%s) = %v, want an error containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

// The validator is shared by every call of a tool.
func TestValidateConcurrent(t *testing.T) {
	v := mustCompile(t, richSchema)
	done := make(chan error)
	for i := range 8 {
		go func() {
			var err error
			for j := range 200 {
				args := `{"name": "ab", "tags": ["a", "b"], "address": {"zip": "12345"}}`
				if (i+j)%2 == 0 {
					args = `{"name": "ab", "tags": ["a", "a"]}`
					if _, e := v.Validate(json.RawMessage(args)); e == nil {
						err = errors.New("repeated tags were accepted")
					}
					continue
				}
				if _, e := v.Validate(json.RawMessage(args)); e != nil {
					err = e
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	v := mustCompile(b, richSchema)
	args := json.RawMessage(`{"name": "héllo", "code": "ABC", "count": 3, "ratio": 0.25, "color": "red",
	  "tags": ["a", "bb", "ccc"], "address": {"zip": "12345"}, "labels": {"a": 1}, "when": "2026-01-02T15:04:05Z"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}
