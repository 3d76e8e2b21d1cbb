package suggest

import "testing"

func TestClosest(t *testing.T) {
	tests := []struct {
		name       string
		candidates []string
		want       string
	}{
		{"descriptoin", []string{"title", "description", "param"}, "description"},
		{"txt", []string{"text", "count"}, "text"},
		{"nmae", []string{"address", "name"}, "name"},
		{"ab", []string{"xy"}, ""},
		{"dbb", []string{"db", "main"}, "db"},
		{"apii", []string{"api"}, "api"},
		{"reslt", []string{"result", "progress"}, "result"},
		{"zzz", []string{"text", "description"}, ""},
		{"a", []string{"b"}, ""}, // one letter of one: not a misspelling
		{"text", []string{"text"}, ""},
		{"colour", []string{"color", "colours"}, "color"}, // ties: the first
	}
	for _, tc := range tests {
		if got := Closest(tc.name, tc.candidates); got != tc.want {
			t.Errorf("Closest(%q, %v) = %q, want %q", tc.name, tc.candidates, got, tc.want)
		}
	}
}
