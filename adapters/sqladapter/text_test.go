package sqladapter

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// The rows' text must be the JSON encoding/json writes for the same values
// (without its HTML escapes), keys in column order.
func TestAppendValueMatchesEncodingJSON(t *testing.T) {
	tests := []any{
		nil, true, false,
		int64(0), int64(-42), int64(maxSafeInt), int64(-maxSafeInt),
		0.0, -0.0, 1.5, 10.99, 0.1, 1e20, 1e21, 123456789.125, 1e-6, 1e-7, 2.5e-8, -3.4e38, math.SmallestNonzeroFloat64, math.MaxFloat64,
		"", "plain", `quote " and backslash \`, "tab\tnewline\nreturn\r", "bell\a nul\x00 unit\x1f del\x7f",
		"<b>&amp;</b>", "ünïcödé ✓ 😀", "line\u2028sep\u2029para", "bad \xff\xfe utf-8", "trailing \xe2\x82",
		[]any{int64(1), "two", nil}, map[string]any{"b": 1.5, "a": []any{}},
	}
	for _, v := range tests {
		got := string(appendValue(nil, v))
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(buf.String(), "\n"); got != want {
			t.Errorf("%#v:\n got %s\nwant %s", v, got, want)
		}
	}
}

func TestAppendRowKeepsColumnOrder(t *testing.T) {
	got := string(appendRow(nil, []string{"z", "a", "m\"x"}, []any{int64(1), "b", nil}))
	if want := `{"z":1,"a":"b","m\"x":null}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\x1f", "\xff", "\u2028", "😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q encodes as invalid JSON %s: %v", s, b, err)
		}
		want, _ := json.Marshal(s) // encoding/json replaces invalid UTF-8 as appendString does
		var wantBack string
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Fatalf("%q reads back as %q, want %q", s, back, wantBack)
		}
	})
}
