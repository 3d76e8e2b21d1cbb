package reload_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpd/mcpd/engine/reload"
	"github.com/mcpd/mcpd/engine/serve"
)

// OnStatus hears of the first load and of every reload, with the files of
// the running config and, for a failed one, each diagnostic with its file,
// line, column and source line; a fixed config clears them.
func TestOnStatus(t *testing.T) {
	var mu sync.Mutex
	var seen []reload.Status
	record := func(st reload.Status) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, st)
	}
	last := func() (reload.Status, int) {
		mu.Lock()
		defer mu.Unlock()
		return seen[len(seen)-1], len(seen)
	}
	e := startWith(t, map[string]string{"tools.hcl": tool("a", "A")}, func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} },
		serve.Options{}, func(r *reload.Reloader) { r.OnStatus = record }, false)
	path := filepath.Join(e.dir, "tools.hcl")

	st, n := last()
	if n != 1 || st.Generation() != 1 || len(st.Files) != 1 || st.Files[0] != path {
		t.Fatalf("after Init: %d statuses, last %+v", n, st)
	}

	write(t, path, tool("a", "A")+"tool \"b\" {\n  nonsense = 1\n}\n")
	if err := e.reloader.Reload(context.Background()); err == nil {
		t.Fatal("a broken config reloaded")
	}
	st, n = last()
	if n != 2 || st.Err == "" || len(st.Diagnostics) == 0 {
		t.Fatalf("after a broken edit: %d statuses, last %+v", n, st)
	}
	d := st.Diagnostics[0]
	if d.Severity != "error" || d.File != path || d.Line != 10 || d.Column != 3 || strings.TrimSpace(d.Source) != "nonsense = 1" {
		t.Errorf("diagnostic %+v, want an error at tools.hcl:10:3 with its source line", d)
	}

	write(t, path, tool("a", "A")+tool("b", "B"))
	if err := e.reloader.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, n = last()
	if n != 3 || st.Err != "" || st.Diagnostics != nil || st.Generation() != 2 {
		t.Errorf("after the fix: %d statuses, last %+v", n, st)
	}
}
