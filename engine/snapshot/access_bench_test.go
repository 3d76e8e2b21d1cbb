package snapshot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/principal"
)

// BenchmarkView is what a scoped tools/list adds per request: the lookup
// of the caller's cached view among 1,000 tools, half of them scoped.
func BenchmarkView(b *testing.B) {
	var cfg strings.Builder
	for i := range 1000 {
		scopes := ""
		if i%2 == 0 {
			scopes = `scopes = ["s` + fmt.Sprint(i%4) + `"]`
		}
		fmt.Fprintf(&cfg, "tool \"t%d\" {\n  description = \"x\"\n  %s\n}\n", i, scopes)
	}
	s, _ := build(b, nil, nil, map[string]string{"tools.hcl": cfg.String()})
	p := &principal.Principal{Name: "b", Scopes: []string{"openid", "s0", "profile"}}
	if n := len(s.View(p).Tools); n != 750 {
		b.Fatalf("%d tools visible, want 750", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.View(p)
	}
}
