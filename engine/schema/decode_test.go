package schema

import (
	"encoding/json"
	"reflect"
	"testing"
)

var decodeCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1`, `-1.5e3`, `1E+2`, `0.000001`, `123456789012345678901234567890`,
	`"plain"`, `"héllo wörld ✓"`, `"esc\"aped"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, "\"bad \xff utf8\"", "\"ctrl \x01\"",
	` { "a" : 1 , "b" : [ true , null , "x" ] , "c" : { } } `,
	`{"a":1,"a":2}`, `{"nested":{"deeper":{"deepest":[[[[1]]]]}}}`,
	`{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1 "b":2}`, `{a:1}`, `[1 2]`, `{`, `[`, `"unterminated`, ``, `   `,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `1e400`, `-1e400`, `1e-400`, `NaN`, `tru`, `nul`, `truex`, `nullnull`,
	`{"a":1} trailing`, `[1]]`, `{"k\u0000":1}`, "{\"k\xff\":1}",
}

// decodeJSON gives exactly what encoding/json gives: the same value, or an
// error with the same message.
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
	got, gotErr := decodeJSON(in)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%q: error %v, encoding/json says %v", in, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: got %#v, encoding/json gives %#v", in, got, want)
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
