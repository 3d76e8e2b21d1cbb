package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
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

// Number converts the text of a JSON number (already known to follow JSON's
// grammar) to the value arguments and decoded results carry:
// an int64 when the number is a whole number that fits (1, -0, 3.0, 1e3 and
// 9007199254740993 are all exact), a float64 otherwise. Zero is never
// negative: -0 and -0.0 become 0, so that `minimum = 0` and what a
// command's argv receives agree. A number beyond a float64's range (1e400)
// is an error. Integers beyond int64 become float64 (inexact); the
// validator refuses them for integer params.
func Number(lit string) (any, error) {
	integral := true
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; c == '.' || c == 'e' || c == 'E' {
			integral = false
			break
		}
	}
	if integral {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, ErrOutOfRange
	}
	if f == 0 {
		return int64(0), nil // also -0 and underflow (1e-400)
	}
	if !integral && f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		if n, ok := exactInt(lit); ok {
			return n, nil
		}
	}
	return f, nil
}

// ErrOutOfRange is Number's error for a number beyond a float64's range.
var ErrOutOfRange = errors.New("number out of range")

// exactInt reads a JSON number written with a fraction or an exponent
// (3.0, 1e3, 9007199254740993.0) as an int64 when its exact decimal value
// is a whole number that fits. It works on the digits, so no exponent can
// make it slow.
func exactInt(lit string) (int64, bool) {
	neg := false
	if lit != "" && lit[0] == '-' {
		neg = true
		lit = lit[1:]
	}
	mant, exp := lit, 0
	if i := indexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		e, err := strconv.Atoi(lit[i+1:])
		if err != nil || e > 400 || e < -400 {
			return 0, false
		}
		exp = e
	}
	digits := make([]byte, 0, len(mant))
	for i := 0; i < len(mant); i++ {
		switch c := mant[i]; {
		case c == '.':
			exp -= len(mant) - i - 1
		default:
			digits = append(digits, c)
		}
	}
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' && exp < 0 {
		digits = digits[:len(digits)-1]
		exp++
	}
	if len(digits) == 0 {
		return 0, true
	}
	if exp < 0 || len(digits)+exp > 19 {
		return 0, false
	}
	for range exp {
		digits = append(digits, '0')
	}
	if neg {
		digits = append([]byte{'-'}, digits...)
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	return n, err == nil
}

func indexAny(s, chars string) int {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return i
			}
		}
	}
	return -1
}

// DecodeJSON decodes one JSON value, with numbers as Number gives them, so
// that an adapter's JSON output keeps 9007199254740993 exact. A number
// beyond a float64's range stays a json.Number, which encodes verbatim.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("invalid character after the JSON value")
	}
	return exactJSON(v), nil
}

func exactJSON(x any) any {
	switch v := x.(type) {
	case json.Number:
		if n, err := Number(string(v)); err == nil {
			return n
		}
	case []any:
		for i := range v {
			v[i] = exactJSON(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = exactJSON(v[k])
		}
	}
	return x
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
	msgs = slices.Compact(msgs) // nested fors each report a spent budget
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
