package openapi

import "testing"

func TestRE2Pattern(t *testing.T) {
	tests := []struct{ in, want string }{
		{`^[a-z]+$`, `^[a-z]+$`},
		{`^[a-zA-Z\u0080-\u024F\s]+$`, `^[a-zA-Z\x{0080}-\x{024F}\s]+$`},
		{`\u00e9\u00e8`, `\x{00e9}\x{00e8}`},
		{`\\u0041(?!x)`, ``},
		{`^(?!none)`, ``},
		{`(a)\1`, ``},
	}
	for _, tt := range tests {
		if got := re2Pattern(tt.in); got != tt.want {
			t.Errorf("re2Pattern(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
