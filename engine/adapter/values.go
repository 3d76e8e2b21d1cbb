package adapter

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// The helpers below evaluate a block's expressions at call time and convert
// between HCL's values (cty) and the plain Go values that JSON decoding
// produces, so that every adapter converts the same way.

// Eval evaluates expr and returns it as a plain Go value (see ToGo).
func Eval(expr hcl.Expression, ectx *hcl.EvalContext) (any, error) {
	v, diags := expr.Value(ectx)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	return ToGo(v)
}

// EvalString evaluates expr to a string. Numbers and bools are converted;
// null is an error naming what was expected.
func EvalString(expr hcl.Expression, ectx *hcl.EvalContext) (string, error) {
	v, diags := expr.Value(ectx)
	if diags.HasErrors() {
		return "", diagError(diags)
	}
	return ValueString(v)
}

// ValueString converts one value to a string.
func ValueString(v cty.Value) (string, error) {
	if v.IsNull() {
		return "", fmt.Errorf("value is null; a string is required")
	}
	if !v.IsWhollyKnown() {
		return "", fmt.Errorf("value is unknown")
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil {
		return "", fmt.Errorf("a string is required, got %s", v.Type().FriendlyName())
	}
	return sv.AsString(), nil
}

// EvalStrings evaluates expr to a list of strings (an argv, for example).
// Each element is converted as by ValueString; a null element is an error.
func EvalStrings(expr hcl.Expression, ectx *hcl.EvalContext) ([]string, error) {
	v, diags := expr.Value(ectx)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	if v.IsNull() {
		return nil, nil
	}
	if !v.CanIterateElements() || v.Type().IsMapType() || v.Type().IsObjectType() {
		return nil, fmt.Errorf("a list of strings is required, got %s", v.Type().FriendlyName())
	}
	out := make([]string, 0, v.LengthInt())
	i := 0
	for it := v.ElementIterator(); it.Next(); i++ {
		_, ev := it.Element()
		s, err := ValueString(ev)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// EvalStringMap evaluates expr to a map of strings (headers, env, query).
// Entries whose value is null are left out, so that an optional argument
// that was not given simply sends nothing.
func EvalStringMap(expr hcl.Expression, ectx *hcl.EvalContext) (map[string]string, error) {
	v, diags := expr.Value(ectx)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	if v.IsNull() {
		return nil, nil
	}
	if !v.Type().IsMapType() && !v.Type().IsObjectType() {
		return nil, fmt.Errorf("a map of strings is required, got %s", v.Type().FriendlyName())
	}
	out := make(map[string]string, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		if ev.IsNull() {
			continue
		}
		s, err := ValueString(ev)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.AsString(), err)
		}
		out[k.AsString()] = s
	}
	return out, nil
}

// ToGo converts a cty value to the Go values JSON decoding produces, except
// that whole numbers that fit become int64 (so that database drivers and
// argv see 42, not 42.0, and 9007199254740993 stays exact). A number beyond
// a float64's range is an error.
func ToGo(v cty.Value) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	if !v.IsWhollyKnown() {
		return nil, fmt.Errorf("value is unknown")
	}
	v, _ = v.Unmark()
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), nil
	case t == cty.Bool:
		return v.True(), nil
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact {
				return i, nil
			}
		}
		f, _ := bf.Float64()
		if math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s is beyond what a 64-bit float holds (about ±1.8e308)", bf.Text('g', 10))
		}
		return f, nil
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			g, err := ToGo(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	case t.IsMapType() || t.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			g, err := ToGo(ev)
			if err != nil {
				return nil, err
			}
			out[k.AsString()] = g
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot convert %s to a JSON value", t.FriendlyName())
}

// FromGo converts a value as produced by JSON decoding (or ToGo) to cty.
// Integers (int64, as the validator delivers whole numbers) become exact cty
// numbers, so that a string conversion (an argv element, a URL) prints every
// digit of 9007199254740993.
func FromGo(x any) cty.Value {
	switch v := x.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType)
	case string:
		return cty.StringVal(v)
	case bool:
		return cty.BoolVal(v)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return cty.NullVal(cty.Number)
		}
		if v == 0 {
			v = 0 // -0 would print as "-0" in an argv or a URL
		}
		return cty.NumberFloatVal(v)
	case float32:
		return cty.NumberFloatVal(float64(v))
	case int:
		return cty.NumberIntVal(int64(v))
	case int64:
		return cty.NumberIntVal(v)
	case json.Number:
		if n, err := cty.ParseNumberVal(string(v)); err == nil {
			return n
		}
		return cty.StringVal(string(v))
	case []any:
		if len(v) == 0 {
			return cty.EmptyTupleVal
		}
		elems := make([]cty.Value, len(v))
		for i, e := range v {
			elems[i] = FromGo(e)
		}
		return cty.TupleVal(elems)
	case map[string]any:
		if len(v) == 0 {
			return cty.EmptyObjectVal
		}
		attrs := make(map[string]cty.Value, len(v))
		for k, e := range v {
			attrs[k] = FromGo(e)
		}
		return cty.ObjectVal(attrs)
	}
	return cty.StringVal(fmt.Sprint(x))
}

// diagError turns call-time diagnostics into one error without source
// snippets: the model sees what went wrong, not the config file.
func diagError(diags hcl.Diagnostics) error {
	var msgs []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		m := d.Summary
		if d.Detail != "" {
			m += ": " + d.Detail
		}
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
