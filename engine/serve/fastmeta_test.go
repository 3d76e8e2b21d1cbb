package serve

import (
	"fmt"
	"strings"
	"testing"
)

// The fast path's reading of capabilities is kept for small objects only,
// and for at most maxMetaCache of them: what a client sends must not pin
// memory for the life of the process.
func TestMetaCacheBounds(t *testing.T) {
	kept := func(c *metaCache) int {
		if m := c.caps.Load(); m != nil {
			return len(*m)
		}
		return 0
	}
	value := map[string]any{"roots": map[string]any{}}
	cases := []struct {
		name string
		keys []string
		want int
	}{
		{"one small object", []string{`{"roots":{}}`}, 1},
		{"the same object twice", []string{`{"roots":{}}`, `{"roots":{}}`}, 1},
		{"an object past the key bound", []string{`{"roots":{},"x":"` + strings.Repeat("a", maxMetaCacheKey) + `"}`}, 0},
		{"more objects than the cache holds", func() []string {
			var keys []string
			for i := range maxMetaCache + 10 {
				keys = append(keys, fmt.Sprintf(`{"roots":{},"n":%d}`, i))
			}
			return keys
		}(), maxMetaCache},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c metaCache
			for _, k := range tc.keys {
				if caps := c.capabilities([]byte(k), value); caps == nil {
					t.Fatalf("capabilities of %.40s: %+v, want them read", k, caps)
				}
			}
			if got := kept(&c); got != tc.want {
				t.Errorf("kept %d objects, want %d", got, tc.want)
			}
		})
	}
}
