package schema_test

import (
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/schema"
)

const sensitiveSchema = `{
  "type": "object",
  "properties": {
    "password": {"type": "string", "writeOnly": true, "pattern": "^[A-Z][a-z0-9]{7,}$", "minLength": 8},
    "pin":      {"type": "integer", "writeOnly": true, "minimum": 1000, "maximum": 9999},
    "token":    {"type": "string", "writeOnly": true, "enum": ["alpha-token", "beta-token"]},
    "expires":  {"type": "string", "writeOnly": true, "format": "date-time"},
    "creds":    {"type": "object", "writeOnly": true, "properties": {"user": {"type": "string"}}, "additionalProperties": false},
    "keys":     {"type": "array", "writeOnly": true, "items": {"type": "string", "pattern": "^k-"}},
    "name":     {"type": "string", "pattern": "^[a-z]+$"}
  },
  "additionalProperties": false
}`

// A sensitive argument (writeOnly, as sensitive = true writes it) that
// breaks a rule gets a message naming the rule, never the value; other
// arguments still show theirs.
func TestValidateSensitive(t *testing.T) {
	v := mustCompile(t, sensitiveSchema)
	tests := []struct {
		name, args, secret, want string
	}{
		{"pattern", `{"password": "hunter2hunter2"}`, "hunter2hunter2",
			`argument "password" must match the pattern ^[A-Z][a-z0-9]{7,}$, got a value not shown (the param is sensitive)`},
		{"length", `{"password": "Hunt3r"}`, "Hunt3r", `argument "password" must be at least 8 characters long, got a value not shown`},
		{"type", `{"password": 123456789}`, "123456789", `argument "password" must be a string, got a value not shown`},
		{"integer bound", `{"pin": 123456}`, "123456", `argument "pin" must be at most 9999, got a value not shown`},
		{"enum", `{"token": "gamma-token-xyz"}`, "gamma-token-xyz", `argument "token" must be one of "alpha-token", "beta-token", got a value not shown`},
		{"format", `{"expires": "not-a-date-secret"}`, "not-a-date-secret", `argument "expires" must be an RFC 3339 date-time`},
		{"unknown key of a sensitive object", `{"creds": {"user": "u", "secretkey": "x"}}`, "secretkey", `argument "creds" is not valid; its value is not shown`},
		{"nested item", `{"keys": ["k-1", "leaked-key"]}`, "leaked-key", `argument "keys[1]" must match the pattern ^k-, got a value not shown`},
		{"not sensitive", `{"name": "Visible1"}`, "", `argument "name" must match the pattern ^[a-z]+$, got "Visible1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Validate([]byte(tc.args))
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the sensitive value is in the error: %q", err)
			}
		})
	}
}

// sensitive = true writes "writeOnly": true; a default that breaks its
// param's rules is reported without its value; sensitive must be a bool.
func TestFromParamsSensitive(t *testing.T) {
	params, ectx := paramsOf(t, `
  param "password" {
    sensitive = true
  }
  param "note" {
    sensitive = false
  }`)
	s, diags := schema.FromParams(params, ectx)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	jsonEqual(t, s, `{"type":"object","additionalProperties":false,"required":["password","note"],"properties":{
		"password":{"type":"string","writeOnly":true},"note":{"type":"string"}}}`)

	params, ectx = paramsOf(t, `
  param "password" {
    sensitive = true
    pattern   = "^[0-9]+$"
    default   = "s3cr3t-default"
  }
  param "flag" {
    sensitive = "yes"
  }`)
	_, diags = schema.FromParams(params, ectx)
	var all []string
	for _, d := range diags {
		all = append(all, d.Summary+": "+d.Detail)
	}
	text := strings.Join(all, "\n")
	if strings.Contains(text, "s3cr3t-default") {
		t.Errorf("the default's value is in the diagnostics: %s", text)
	}
	for _, want := range []string{"Invalid default", "got a value not shown", "sensitive must be true or false"} {
		if !strings.Contains(text, want) {
			t.Errorf("diagnostics without %q: %s", want, text)
		}
	}
}
