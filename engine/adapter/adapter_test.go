package adapter_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
)

func parse(t *testing.T, src string) hcl.Expression {
	t.Helper()
	e, diags := hclsyntax.ParseExpression([]byte(src), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return e
}

func TestScopeCheck(t *testing.T) {
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: map[string]string{"n": "integer", "name": "string"}}
	tests := []struct {
		src, err string
	}{
		{src: `"${args.name}-${args.n}"`},
		{src: `args["name"]`},
		{src: `upper(args.name)`},
		{src: `args.nope`, err: "args.nope is not declared; declared params: n, name"},
		{src: `other.x`, err: `There is no variable named "other"`},
		{src: `nofunc(1)`, err: `There is no function named "nofunc"`},
		{src: `file("pages/${args.name}.txt")`, err: "file() cannot take values from the call's arguments"},
		{src: `env(args.name)`, err: "env() cannot take values from the call's arguments"},
		{src: `file("static.txt")`},
	}
	for _, tt := range tests {
		diags := scope.Check(parse(t, tt.src))
		switch {
		case tt.err == "" && diags.HasErrors():
			t.Errorf("%s: unexpected %v", tt.src, diags)
		case tt.err != "" && (!diags.HasErrors() || !strings.Contains(diags.Error(), tt.err)):
			t.Errorf("%s: got %v, want %q", tt.src, diags, tt.err)
		}
	}
	if d := scope.CheckStatic(parse(t, `"x-${args.n}"`), "timeout"); !d.HasErrors() || !strings.Contains(d.Error(), "cannot depend on the call's arguments") {
		t.Errorf("CheckStatic: %v", d)
	}
	backend := &adapter.Scope{Functions: funcs.Table(".")}
	if d := backend.Check(parse(t, `args.x`)); !d.HasErrors() || !strings.Contains(d.Error(), "no call arguments") {
		t.Errorf("backend scope: %v", d)
	}
}

func TestEvalHelpers(t *testing.T) {
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: map[string]string{"n": "integer", "s": "string", "opt": "string"}}
	ectx := scope.CallContext(map[string]any{"n": 42.0, "s": "; rm -rf /"})

	argv, err := adapter.EvalStrings(parse(t, `["git", "log", "-n", args.n, args.s]`), ectx)
	if err != nil || !reflect.DeepEqual(argv, []string{"git", "log", "-n", "42", "; rm -rf /"}) {
		t.Errorf("EvalStrings = %q, %v", argv, err)
	}
	if _, err := adapter.EvalStrings(parse(t, `["x", args.opt]`), ectx); err == nil || !strings.Contains(err.Error(), "element 1") {
		t.Errorf("a null element must be an error naming it, got %v", err)
	}
	m, err := adapter.EvalStringMap(parse(t, `{ a = args.s, b = args.opt, c = 1 }`), ectx)
	if err != nil || !reflect.DeepEqual(m, map[string]string{"a": "; rm -rf /", "c": "1"}) {
		t.Errorf("EvalStringMap = %v, %v (null entries are left out)", m, err)
	}
	v, err := adapter.Eval(parse(t, `{ n = args.n, half = args.n / 4, list = [true, null] }`), ectx)
	want := map[string]any{"n": int64(42), "half": 10.5, "list": []any{true, nil}}
	if err != nil || !reflect.DeepEqual(v, want) {
		t.Errorf("Eval = %#v, %v", v, err)
	}
	if _, err := adapter.EvalString(parse(t, `args.opt`), ectx); err == nil || !strings.Contains(err.Error(), "null") {
		t.Errorf("EvalString of null: %v", err)
	}
}

func TestFromGoToGoRoundTrip(t *testing.T) {
	for _, x := range []any{
		nil, "s", true, 1.5, []any{}, map[string]any{},
		map[string]any{"a": []any{"x", 2.5, map[string]any{"b": false}}},
	} {
		got, err := adapter.ToGo(adapter.FromGo(x))
		if err != nil || !reflect.DeepEqual(got, x) {
			t.Errorf("round trip of %#v = %#v, %v", x, got, err)
		}
	}
	if got, _ := adapter.ToGo(cty.NumberIntVal(9007199254740993)); got != int64(9007199254740993) {
		t.Errorf("large integers must stay exact, got %v", got)
	}
}

func TestRegistry(t *testing.T) {
	reg := adapter.NewRegistry()
	reg.Register("b", nil)
	reg.Register("a", nil)
	if got := reg.ToolBlocks(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("ToolBlocks = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a block twice must panic")
		}
	}()
	reg.Register("a", nil)
}

func TestDecodeJSONExact(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
		err  bool
	}{
		{`{"id": 9007199254740993, "x": 0.5, "z": -0, "big": 1e400}`, map[string]any{"id": int64(9007199254740993), "x": 0.5, "z": int64(0), "big": json.Number("1e400")}, false},
		{`[1, 2.0, 3e0]`, []any{int64(1), int64(2), int64(3)}, false},
		{` 7 `, int64(7), false},
		{`1 2`, nil, true},
		{`{`, nil, true},
	} {
		got, err := adapter.DecodeJSON([]byte(tc.in))
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("DecodeJSON(%s) = %#v, %v; want %#v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// Arguments reach an argv or a URL as their exact decimal text, and -0 as 0.
func TestFromGoExact(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		in   any
		want string
	}{
		{int64(9007199254740993), "9007199254740993"},
		{int64(math.MinInt64), "-9223372036854775808"},
		{negZero, "0"},
		{0.25, "0.25"},
	} {
		got, err := adapter.ValueString(adapter.FromGo(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("FromGo(%#v) as a string = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := adapter.ToGo(cty.MustParseNumberVal("1e400")); err == nil {
		t.Error("ToGo(1e400): no error")
	}
	if got, _ := adapter.ToGo(cty.MustParseNumberVal("9007199254740993")); got != int64(9007199254740993) {
		t.Errorf("ToGo(9007199254740993) = %#v", got)
	}
}
