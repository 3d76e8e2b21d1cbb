package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzValidate fuzzes the argument validator: any schema Compile accepts
// and any arguments a client sends give a result or an error that says
// what to fix, never a panic; arguments that pass still pass once their
// defaults are applied; and the value of a writeOnly (sensitive) param is
// never echoed in an error.
func FuzzValidate(f *testing.F) {
	for _, c := range [][2]string{
		{`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10}},"required":["n"]}`, `{"n":3}`},
		{`{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]+$","maxLength":5}}}`, `{"s":"abcdefg"}`},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"number","multipleOf":0.5},"uniqueItems":true,"maxItems":3}}}`, `{"a":[1,1.5,1]}`},
		{`{"type":"object","properties":{"o":{"type":"object","additionalProperties":false,"properties":{"x":{"enum":["a",1,null]}}}}}`, `{"o":{"x":2,"y":1}}`},
		{`{"type":"object","properties":{"d":{"type":"string","default":"z","format":"date-time"}}}`, `{}`},
		{`{"type":"object","properties":{"k":{"type":"string","writeOnly":true,"minLength":40}}}`, `{"k":"hunter2-secret"}`},
		{`{"type":"object","properties":{"u":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, `{"u":1.5}`},
		{`{"type":"object","properties":{"i":{"type":"integer","exclusiveMaximum":9007199254740993}}}`, `{"i":9007199254740993}`},
	} {
		f.Add([]byte(c[0]), []byte(c[1]))
	}
	f.Fuzz(func(t *testing.T, schemaJSON, args []byte) {
		var s map[string]any
		if json.Unmarshal(schemaJSON, &s) != nil {
			return
		}
		v, err := Compile(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		got, err := v.Validate(args)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			checkSecretNotEchoed(t, s, args, err.Error())
			return
		}
		again, _ := json.Marshal(got)
		if _, err := v.Validate(again); err != nil {
			t.Fatalf("arguments %s passed, but with their defaults applied (%s) they fail: %v", args, again, err)
		}
	})
}

// checkSecretNotEchoed fails when a string argument of a writeOnly param
// appears in msg (unless the schema or the param's name spells it anyway).
func checkSecretNotEchoed(t *testing.T, s map[string]any, args []byte, msg string) {
	props, _ := s["properties"].(map[string]any)
	var in map[string]any
	if json.Unmarshal(args, &in) != nil {
		return
	}
	schemaText, _ := json.Marshal(s)
	for name, p := range props {
		ps, _ := p.(map[string]any)
		if ps["writeOnly"] != true {
			continue
		}
		val, ok := in[name].(string)
		if !ok || len(val) < 8 || strings.Contains(string(schemaText), val) || strings.Contains(name, val) {
			continue
		}
		if strings.Contains(msg, val) {
			t.Fatalf("the error %q echoes the value of the writeOnly param %s", msg, name)
		}
	}
}
