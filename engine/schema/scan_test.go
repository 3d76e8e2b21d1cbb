package schema

import (
	"encoding/json"
	"testing"
)

// The Scanner may refuse what is valid (the caller then leaves the input to
// the SDK), but what it accepts must be valid JSON, read as encoding/json
// reads it.
func TestScannerRaw(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		rest string // what is left after the value
	}{
		{`{}`, true, ""},
		{` {"a":[1,2.5,-3e2,true,false,null,"x"]} ,`, true, " ,"},
		{`"esc\n\"\\\/\b\f\r\t\u00e9"`, true, ""},
		{`"bad \x"`, false, ""},
		{`"short \u12"`, false, ""},
		{"\"ctl \x01\"", false, ""},
		{"\"bad utf-8 \xff\"", false, ""},
		{`{"a":}`, false, ""},
		{`{"a" 1}`, false, ""},
		{`[1,]`, false, ""},
		{`01`, true, "1"}, // a number, then what follows: the caller's to refuse
		{`1.`, false, ""},
		{`-`, false, ""},
		{`tru`, false, ""},
		{`1e400`, false, ""}, // out of range: decodeJSON's fallback, so refused
	} {
		var sc Scanner
		sc.Reset([]byte(tc.in))
		raw, ok := sc.Raw()
		if ok != tc.ok {
			t.Errorf("Raw(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if !json.Valid(raw) {
			t.Errorf("Raw(%q) = %q, not valid JSON", tc.in, raw)
		}
		if rest := tc.in[sc.d.pos:]; rest != tc.rest {
			t.Errorf("Raw(%q) leaves %q, want %q", tc.in, rest, tc.rest)
		}
	}
}

func TestScannerObjectAndInt(t *testing.T) {
	var sc Scanner
	sc.Reset([]byte(`{"id": -12, "s":"v", "n": 1.5}`))
	var id int64
	var s []byte
	ok := sc.Object(func(k []byte) bool {
		switch string(k) {
		case "id":
			var ok bool
			id, ok = sc.Int()
			return ok
		case "s":
			var ok bool
			s, ok = sc.String()
			return ok
		case "n":
			_, ok := sc.Int() // 1.5 is no integer
			return ok
		}
		return false
	})
	if ok || id != -12 || string(s) != "v" {
		t.Errorf("Object = %v, id %d, s %q; want false (1.5), -12, v", ok, id, s)
	}
	for _, in := range []string{`1`, `-0`, `123456789012345`} {
		sc.Reset([]byte(in))
		if _, ok := sc.Int(); !ok {
			t.Errorf("Int(%s) refused", in)
		}
	}
	for _, in := range []string{`1234567890123456`, `01`, `1e2`, `1.0`, `-`, `"1"`} {
		sc.Reset([]byte(in))
		if _, ok := sc.Int(); ok {
			t.Errorf("Int(%s) accepted", in)
		}
	}
}

// FuzzScannerRaw: whatever Raw accepts is valid JSON.
func FuzzScannerRaw(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\n"}]}`, `"\u00e9"`, `[1e5,-0.5]`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var sc Scanner
		sc.Reset([]byte(in))
		if raw, ok := sc.Raw(); ok && !json.Valid(raw) {
			t.Fatalf("Raw(%q) accepted %q, which is not valid JSON", in, raw)
		}
	})
}
