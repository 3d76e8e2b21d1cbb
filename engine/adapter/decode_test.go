package adapter_test

import (
	"math"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
)

// attr parses `name = src` as the only attribute of a body.
func attr(t *testing.T, src string) *hcl.Attribute {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() || len(attrs) != 1 {
		t.Fatal(diags)
	}
	for _, a := range attrs {
		return a
	}
	return nil
}

// The toolkit's messages, one per mistake: every adapter shows these.
func TestDecoderMessages(t *testing.T) {
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: map[string]string{"n": "integer"}}
	tests := []struct {
		name, src string
		decode    func(d *adapter.Decoder, a *hcl.Attribute) any
		want      any    // the value, when no error
		err       string // "Summary: Detail"
	}{
		{"string", `x = "a"`, str, "a", ""},
		{"string from a number", `x = 5`, str, "5", ""},
		{"string null", `x = null`, str, nil, "Missing value: x must not be null."},
		{"string from a list", `x = [1]`, str, nil, "Incorrect attribute value type: x must be a string, got tuple."},
		{"string from args", `x = args.n`, str, nil, `Value must be known at load time: x cannot depend on the call's arguments; remove the reference to "args.n".`},
		{"string from env", `x = env("MCPD_TEST_SURELY_UNSET_VARIABLE_2")`, str, nil, "Error in function call"},
		{"bool", `x = true`, boolean, true, ""},
		{"bool from a word", `x = "maybe"`, boolean, nil, "Incorrect attribute value type: x must be a bool, got string."},
		{"int", `x = 3`, integer(1, 10), int64(3), ""},
		{"int too small", `x = 0`, integer(1, 10), nil, "Invalid number: x must be a whole number from 1 to 10, got 0."},
		{"int fraction", `x = 1.5`, integer(1, 10), nil, "Invalid number: x must be a whole number from 1 to 10, got 1.5."},
		{"int unbounded", `x = 0`, integer(1, math.MaxInt64), nil, "Invalid number: x must be a whole number of at least 1, got 0."},
		{"duration", `x = "1m30s"`, duration(0, 0), 90 * time.Second, ""},
		{"duration unparsable", `x = "soon"`, duration(0, 0), nil, `Invalid duration: x: "soon" is not a duration; use a value such as "10s", "1m30s" or "250ms".`},
		{"duration number", `x = 10`, duration(0, 0), nil, `Invalid duration: x must be a duration string such as "10s", "1m30s" or "250ms", got number.`},
		{"duration negative", `x = "-1s"`, duration(0, 0), nil, "Invalid duration: x must be positive or zero, got -1s."},
		{"duration zero", `x = "0s"`, duration(time.Nanosecond, 0), nil, "Invalid duration: x must be positive, got 0s."},
		{"duration range", `x = "2h"`, duration(time.Millisecond, time.Hour), nil, "Invalid duration: x must be between 1ms and 1h0m0s, got 2h0m0s."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := adapter.NewDecoder(scope)
			got := tt.decode(d, attr(t, tt.src))
			if tt.err == "" {
				if d.HasErrors() || got != tt.want {
					t.Errorf("got %v, %s; want %v", got, d.Diags.Error(), tt.want)
				}
				return
			}
			found := false
			for _, dg := range d.Diags {
				if msg := dg.Summary + ": " + dg.Detail; dg.Severity == hcl.DiagError && (msg == tt.err || dg.Summary == tt.err) {
					found = dg.Subject != nil && dg.Subject.Start.Line == 1
				}
			}
			if !found {
				t.Errorf("want %q with a range, got:\n%s", tt.err, d.Diags.Error())
			}
		})
	}
}

func str(d *adapter.Decoder, a *hcl.Attribute) any {
	if s, ok := d.String(a, ""); ok {
		return s
	}
	return nil
}

func boolean(d *adapter.Decoder, a *hcl.Attribute) any {
	if b, ok := d.Bool(a, ""); ok {
		return b
	}
	return nil
}

func integer(lo, hi int64) func(d *adapter.Decoder, a *hcl.Attribute) any {
	return func(d *adapter.Decoder, a *hcl.Attribute) any {
		if n, ok := d.Int(a, "", lo, hi); ok {
			return n
		}
		return nil
	}
}

func duration(lo, hi time.Duration) func(d *adapter.Decoder, a *hcl.Attribute) any {
	return func(d *adapter.Decoder, a *hcl.Attribute) any {
		if v, ok := d.Duration(a, "", lo, hi); ok {
			return v
		}
		return nil
	}
}

// A Schema is what Content checks, nested blocks by their header only, and
// what a reader of the schema (an editor) walks down.
func TestSchema(t *testing.T) {
	inner := &adapter.Schema{Attributes: []hcl.AttributeSchema{{Name: "attempts"}}}
	s := &adapter.Schema{
		Attributes: []hcl.AttributeSchema{{Name: "url", Required: true}},
		Blocks:     []adapter.BlockSchema{{Type: "retry", Schema: inner}},
	}
	if s.Block("retry") != inner || s.Block("nope") != nil {
		t.Error("Block does not find the nested schema")
	}
	f, _ := hclsyntax.ParseConfig([]byte("retry {}\nextra = 1\n"), "t.hcl", hcl.InitialPos)
	d := adapter.NewDecoder(&adapter.Scope{})
	content, ok := d.Content(f.Body, s)
	if ok || content == nil || len(content.Blocks) != 1 {
		t.Fatalf("content %v ok %v", content, ok)
	}
	var summaries []string
	for _, dg := range d.Diags {
		summaries = append(summaries, dg.Summary)
	}
	if len(summaries) != 2 {
		t.Errorf("want the missing url and the unsupported extra, got %q", summaries)
	}
}

type fakeBackend struct{}

func (fakeBackend) Close() error { return nil }

type otherBackend struct{}

func (otherBackend) Close() error { return nil }

func TestLookupBackend(t *testing.T) {
	b := &adapter.ToolBlock{
		Type: "thing",
		Backend: func(typ, name string) (adapter.Backend, bool) {
			switch name {
			case "main":
				return fakeBackend{}, true
			case "odd":
				return otherBackend{}, true
			}
			return nil, false
		},
		BackendNames: func(string) []string { return []string{"main", "odd"} },
	}
	for _, tt := range []struct{ src, err string }{
		{`backend = "main"`, ""},
		{`backend = "mian"`, `Unknown store: There is no store named "mian". Did you mean "main"?`},
		{`backend = "zzzzzzzz"`, `Unknown store: There is no store named "zzzzzzzz"; declare it at the top level: store "zzzzzzzz" {}.`},
		{`backend = "odd"`, `Unknown store: The store "odd" is not a backend of the thing adapter.`},
	} {
		d := adapter.NewDecoder(&adapter.Scope{})
		be, ok := adapter.LookupBackend[fakeBackend](d, b, attr(t, tt.src), "store", `store %q {}`)
		if tt.err == "" {
			if !ok || be != (fakeBackend{}) || d.HasErrors() {
				t.Errorf("%s: %v %v %s", tt.src, be, ok, d.Diags.Error())
			}
			continue
		}
		if ok || len(d.Diags) != 1 || d.Diags[0].Summary+": "+d.Diags[0].Detail != tt.err {
			t.Errorf("%s: got %s, want %s", tt.src, d.Diags.Error(), tt.err)
		}
	}
}

func TestTrimPartialRune(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"é", "é"},
		{"a\xc3", "a"},
		{"€"[:2], ""},
		{"x€", "x€"},
		{"x" + "😀"[:3], "x"},
	} {
		if got := string(adapter.TrimPartialRune([]byte(tt.in))); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}
