package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var decodeCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1`, `-1.5e3`, `1E+2`, `0.000001`, `123456789012345678901234567890`,
	`"plain"`, `"héllo wörld ✓"`, `"esc\"aped"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, "\"bad \xff utf8\"", "\"ctrl \x01\"",
	` { "a" : 1 , "b" : [ true , null , "x" ] , "c" : { } } `,
	`{"a":1,"a":2}`, `{"nested":{"deeper":{"deepest":[[[[1]]]]}}}`,
	`{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1 "b":2}`, `{a:1}`, `[1 2]`, `{`, `[`, `"unterminated`, ``, `   `,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `1e400`, `-1e400`, `1e-400`, `9007199254740993`, `-0.0`, `1.0e2`, `{"a":[1,{"b":1e400}]}`, `{"s\\n":1e400}`, `NaN`, `tru`, `nul`, `truex`, `nullnull`,
	`{"a":1} trailing`, `[1]]`, `{"k\u0000":1}`, "{\"k\xff\":1}",
}

// decodeJSON gives what encoding/json gives (the same value, or an error
// with the same message), except for numbers, which are exact: the
// reference below reads encoding/json's json.Number with math/big.
func TestDecodeJSONMatchesEncodingJSON(t *testing.T) {
	deep := ""
	for range 200 {
		deep += "["
	}
	for range 200 {
		deep += "]"
	}
	for _, in := range append(decodeCases, deep) {
		checkDecode(t, []byte(in))
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkDecode(t, in) })
}

func checkDecode(t *testing.T, in []byte) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal(in, &want)
	if wantErr == nil {
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		want, wantErr = referenceNumbers(want)
	}
	var wantRange *RangeError
	if u, ok := wantErr.(*json.UnmarshalTypeError); ok && strings.HasPrefix(u.Value, "number") {
		wantErr = &RangeError{}
	}
	got, gotErr := decodeJSON(in)
	if errors.As(wantErr, &wantRange) {
		var re *RangeError
		if !errors.As(gotErr, &re) {
			t.Fatalf("%q: error %v, want a RangeError", in, gotErr)
		}
		return
	}
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%q: error %v, encoding/json says %v", in, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: got %#v, want %#v", in, got, want)
	}
}

// referenceNumbers is Number written the slow, obvious way.
func referenceNumbers(x any) (any, error) {
	switch v := x.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, &RangeError{Lit: string(v)}
		}
		if f == 0 {
			return int64(0), nil
		}
		if f != math.Trunc(f) || f >= 1<<63 || f < -(1<<63) {
			return f, nil
		}
		r, ok := new(big.Rat).SetString(string(v))
		if ok && r.IsInt() && r.Num().IsInt64() {
			return r.Num().Int64(), nil
		}
		return f, nil
	case []any:
		for i := range v {
			e, err := referenceNumbers(v[i])
			if err != nil {
				return nil, err
			}
			v[i] = e
		}
	case map[string]any:
		for k := range v {
			e, err := referenceNumbers(v[k])
			if err != nil {
				return nil, err
			}
			v[k] = e
		}
	}
	return x, nil
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{"0", int64(0)}, {"-0", int64(0)}, {"-0.0", int64(0)}, {"-0e5", int64(0)}, {"-1e-400", int64(0)},
		{"9007199254740993", int64(9007199254740993)}, {"9007199254740993.0", int64(9007199254740993)},
		{"90071992547409930e-1", int64(9007199254740993)}, {"1e3", int64(1000)}, {"3.0", int64(3)},
		{"-9223372036854775808", int64(math.MinInt64)}, {"9223372036854775807", int64(math.MaxInt64)},
		{"9223372036854775808", float64(1 << 63)}, {"1.5", 1.5}, {"-2.5e-3", -0.0025}, {"1e300", 1e300},
		{"1e400", nil}, {"-1e400", nil},
	} {
		got, err := Number(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("Number(%s) = %#v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Number(%s) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
		if f, ok := got.(float64); ok && math.Signbit(f) && f == 0 {
			t.Errorf("Number(%s) is negative zero", tc.in)
		}
	}
}

// BenchmarkDecodeJSON compares decoding typical arguments with
// encoding/json and with decodeJSON.
func BenchmarkDecodeJSON(b *testing.B) {
	args := []byte(`{"name": "héllo", "code": "ABC", "count": 3, "ratio": 0.25, "color": "red",
	  "tags": ["a", "bb", "ccc"], "address": {"zip": "12345"}, "labels": {"a": 1}, "when": "2026-01-02T15:04:05Z"}`)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var x any
			if err := json.Unmarshal(args, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeJSON(args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
