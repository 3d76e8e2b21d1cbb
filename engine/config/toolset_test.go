package config

import "testing"

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		glob, name string
		want       bool
	}{
		{"get_ticket", "get_ticket", true},
		{"get_ticket", "get_tickets", false},
		{"search_*", "search_", true},
		{"search_*", "search_users", true},
		{"search_*", "research_users", false},
		{"*_ticket", "close_ticket", true},
		{"*", "", true},
		{"*", "anything at all", true},
		{"get_?", "get_a", true},
		{"get_?", "get_ab", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a*b*c", "abcbc", true},
		{"docs://*", "docs://faq", true},
		{"docs://*", "tickets://{id}", false},
		{"tickets://*", "tickets://{id}", true},
		{"**x", "abx", true},
		{"", "", true},
		{"", "a", false},
	}
	for _, tc := range tests {
		if got := globMatch(tc.glob, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.glob, tc.name, got, tc.want)
		}
	}
	p := Pattern{Text: "!close_*"}
	if !p.Exclude() || !p.Wild() || !p.Match("close_ticket") || p.Match("get_ticket") {
		t.Errorf("exclusion pattern %q misread", p.Text)
	}
}
