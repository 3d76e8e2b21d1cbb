package ident

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		in  string
		why string // "": accepted
	}{
		{"files://readme", ""},
		{"get-sum", ""},
		{"Café menü 日本語 🙂", ""},
		{"https://example.com/a b?c=d#e", ""},
		{"", ""},
		{"files://\x1b[31mred", "escape"},
		{"a\nb", "control"},
		{"a\rb", "control"},
		{"a\tb", "control"},
		{"nul\x00", "control"},
		{"del\x7f", "control"},
		{"c1\u009b2J", "control"},
		{"abc\u202edcb", "bidi"},
		{"iso\u2066late", "bidi"},
		{"zero\u200bwidth", "invisible"},
		{"bom\ufeff", "invisible"},
		{"line\u2028sep", "line separator"},
		{"bad\xffutf8", "UTF-8"},
		{strings.Repeat("a", MaxLen+1), "longer"},
	} {
		err := Check(tc.in)
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("Check(%q) = %v, want accepted", tc.in, err)
		case tc.why != "" && (err == nil || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("Check(%q) = %v, want a refusal with %q", tc.in, err, tc.why)
		}
	}
	if err := CheckLen("data:image/png;base64,"+strings.Repeat("A", 2*MaxLen), 0); err != nil {
		t.Errorf("CheckLen without a bound: %v", err)
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"Plain text.":              "Plain text.",
		"Two\nlines\twith a tab.":  "Two\nlines\twith a tab.",
		"Red \x1b[31mtext\x1b[0m.": "Red [31mtext[0m.",
		"Title\x1b]0;owned\x07!":   "Title]0;owned!",
		"CRLF\r\nline":             "CRLF\nline",
		"c1\u009b2J":               "c12J",
		"rev\u202eersed":           "reversed",
		"emoji 👩\u200d💻 stays":     "emoji 👩\u200d💻 stays",
		"bad\xffbyte":              "bad\ufffdbyte",
		"sep\u2028arated":          "separated",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}
