package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
)

// The default tools.hcl's word_count, run for real (wc): a last line without
// a newline is a line.
func TestDefaultWordCount(t *testing.T) {
	clearEnv(t)
	t.Setenv("MCPD_DATA_DIR", t.TempDir())
	config := filepath.Join("..", "..", "tools.hcl")
	tests := []struct {
		text string
		want map[string]int
	}{
		{"hello world", map[string]int{"lines": 1, "words": 2, "characters": 11}},
		{"a\nb", map[string]int{"lines": 2, "words": 2, "characters": 3}},
		{"a\nb\n", map[string]int{"lines": 2, "words": 2, "characters": 4}},
		{"", map[string]int{"lines": 0, "words": 0, "characters": 0}},
		{"\n\n", map[string]int{"lines": 2, "words": 0, "characters": 2}},
		{"é x", map[string]int{"lines": 1, "words": 2, "characters": 3}},
	}
	for _, tc := range tests {
		args, _ := json.Marshal(map[string]string{"text": tc.text})
		r := runCLI(t, "call", "-c", config, "word_count", "--args", string(args))
		var got map[string]int
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("word_count(%q) = %+v, want %v", tc.text, r, tc.want)
		}
	}
}
