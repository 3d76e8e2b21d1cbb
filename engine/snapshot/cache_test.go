// The result cache through Tool.Call: these test the cache blocks as
// compiled from HCL (the key's parts from params, from_caller and asks; ttl,
// max_entry_bytes, reloads), which is snapshot's orchestration; engine/cache
// tests its keys and stores directly.

package snapshot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/cache"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/internal/wait"
)

// cachedConfig is a read-only tool that echoes its arguments, counting
// its backend's calls, with the given cache block body.
func cachedConfig(cacheBody, extra string) map[string]string {
	return cachedConfigWith("", cacheBody, extra)
}

// cachedConfigWith is cachedConfig with a server block's body.
func cachedConfigWith(server, cacheBody, extra string) map[string]string {
	return map[string]string{"tools.hcl": `
server {
  name = "cache-test"
` + server + `
}

fake_backend "b" {
  setting = "x"
}

tool "lookup" {
  description = "Looks up a thing."
  annotations {
    read_only = true
  }
  param "id" {
    type = "integer"
  }
  param "lang" {
    type    = "string"
    default = "en"
  }
` + extra + `
  cache {
` + cacheBody + `
  }
  fake {
    mode    = "echo"
    backend = "b"
  }
}

tool "failing" {
  description = "Always fails."
  annotations {
    read_only = true
  }
  cache {}
  fake {
    mode    = "error"
    backend = "b"
  }
}
`}
}

func backendCalls(f *fake) int32 { return f.opened()[0].calls.Load() }

func cacheStatus(res *mcp.CallToolResult) string { return cache.Status(res) }

func asCaller(name string) context.Context {
	if name == "" {
		return context.Background()
	}
	return principal.NewContext(context.Background(), &principal.Principal{Name: name, Method: "api_key"})
}

// Two callers never share an entry unless the tool says its results are
// shared; the key is the canonical arguments after defaults, so the order
// and an explicit default do not matter.
func TestCacheKeys(t *testing.T) {
	tests := []struct {
		name   string
		shared bool
		calls  []struct{ who, args string }
		// wantBackend is the backend's calls after them all.
		wantBackend int32
		// wantStatus is each call's cache status.
		wantStatus []string
	}{
		{
			name: "per principal", calls: []struct{ who, args string }{{"ann", `{"id":1}`}, {"bob", `{"id":1}`}, {"ann", `{"id":1}`}, {"bob", `{"id":1}`}, {"", `{"id":1}`}},
			wantBackend: 3, wantStatus: []string{"miss", "miss", "hit", "hit", "miss"},
		},
		{
			name: "shared", shared: true, calls: []struct{ who, args string }{{"ann", `{"id":1}`}, {"bob", `{"id":1}`}, {"", `{"id":1}`}},
			wantBackend: 1, wantStatus: []string{"miss", "hit", "hit"},
		},
		{
			name: "canonical arguments", calls: []struct{ who, args string }{{"ann", `{"id":1,"lang":"en"}`}, {"ann", `{"lang":"en","id":1}`}, {"ann", `{"id":1}`}, {"ann", `{"id":2}`}, {"ann", `{"id":1,"lang":"fr"}`}},
			wantBackend: 3, wantStatus: []string{"miss", "hit", "hit", "miss", "miss"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			body := `ttl = "1h"`
			if tc.shared {
				body += "\nshared = true"
			}
			s, _ := build(t, f.register(), nil, cachedConfig(body, ""))
			tl := tool(t, s, "lookup")
			var first string
			for i, c := range tc.calls {
				res := call(tl, asCaller(c.who), json.RawMessage(c.args), nil)
				if res.IsError {
					t.Fatalf("call %d: %s", i, render(res))
				}
				if got := cacheStatus(res); got != tc.wantStatus[i] {
					t.Errorf("call %d (%s %s): cache %q, want %q", i, c.who, c.args, got, tc.wantStatus[i])
				}
				if i == 0 {
					first = render(res)
				} else if tc.wantStatus[i] == "hit" && tc.calls[i].args == tc.calls[0].args && render(res) != first {
					t.Errorf("call %d: a hit answered %q, want %q", i, render(res), first)
				}
			}
			if got := backendCalls(f); got != tc.wantBackend {
				t.Errorf("backend called %d times, want %d", got, tc.wantBackend)
			}
		})
	}
}

// A hit says so in _meta, with its age and the ttlMs and cacheScope of
// the 2026 protocol's cache fields.
func TestCacheMeta(t *testing.T) {
	f := newFake()
	s, _ := build(t, f.register(), nil, cachedConfig(`ttl = "90s"`, ""))
	tl := tool(t, s, "lookup")
	miss := call(tl, asCaller("ann"), json.RawMessage(`{"id":7}`), nil)
	hit := call(tl, asCaller("ann"), json.RawMessage(`{"id":7}`), nil)
	for _, c := range []struct {
		res  *mcp.CallToolResult
		want string
	}{
		{miss, `{"mcpd/cache":{"hit":false,"ttlMs":90000,"cacheScope":"private"}}`},
		{hit, `{"mcpd/cache":{"hit":true,"ageMs":0,"ttlMs":90000,"cacheScope":"private"}}`},
	} {
		b, _ := json.Marshal(c.res.Meta)
		got := string(b)
		// ageMs is omitted when 0 and varies: compare without it.
		got = strings.NewReplacer(`"ageMs":0,`, "").Replace(got)
		if i := strings.Index(got, `"ageMs":`); i >= 0 {
			j := strings.Index(got[i:], ",")
			got = got[:i] + got[i+j+1:]
		}
		want := strings.NewReplacer(`"ageMs":0,`, "").Replace(c.want)
		if got != want {
			t.Errorf("_meta = %s, want %s", got, want)
		}
	}
	if render(miss) != render(hit) {
		t.Errorf("hit %q differs from the miss %q", render(hit), render(miss))
	}
}

// An entry is not served past its TTL.
func TestCacheTTLExpiry(t *testing.T) {
	f := newFake()
	s, _ := build(t, f.register(), nil, cachedConfig(`ttl = "100ms"`, ""))
	tl := tool(t, s, "lookup")
	call(tl, asCaller("ann"), json.RawMessage(`{"id":1}`), nil)
	// The entry was stored before the call returned: once its TTL has
	// passed since then, it has expired.
	stored := time.Now()
	wait.Until(t, "the entry's TTL passed", func() bool { return time.Since(stored) > 100*time.Millisecond })
	res := call(tl, asCaller("ann"), json.RawMessage(`{"id":1}`), nil)
	if got := cacheStatus(res); got != "miss" {
		t.Errorf("after the TTL: cache %q, want miss", got)
	}
	if got := backendCalls(f); got != 2 {
		t.Errorf("backend called %d times, want 2", got)
	}
}

// Tool errors are never cached; neither is a result larger than
// max_entry_bytes.
func TestCacheSkipsErrorsAndLargeResults(t *testing.T) {
	f := newFake()
	s, _ := build(t, f.register(), nil, cachedConfig(`ttl = "1h"
    max_entry_bytes = 64`, ""))
	for i := range 2 {
		res := call(tool(t, s, "failing"), asCaller("ann"), nil, nil)
		if !res.IsError || cacheStatus(res) != "" {
			t.Fatalf("call %d: %s (cache %q), want an uncached error", i, render(res), cacheStatus(res))
		}
	}
	if got := backendCalls(f); got != 2 {
		t.Fatalf("failing tool: backend called %d times, want 2", got)
	}
	// The echo of these arguments is more than 64 bytes of JSON.
	big := json.RawMessage(`{"id":1,"lang":"` + strings.Repeat("x", 80) + `"}`)
	for range 2 {
		call(tool(t, s, "lookup"), asCaller("ann"), big, nil)
	}
	if got := backendCalls(f); got != 4 {
		t.Errorf("large result: backend called %d times in all, want 4", got)
	}
}

// A reload keeps the entries of a tool it does not change and drops those
// of a tool it changes.
func TestCacheReload(t *testing.T) {
	f := newFake()
	cfg := cachedConfig(`ttl = "1h"`, "")
	s1, dir := build(t, f.register(), nil, cfg)
	call(tool(t, s1, "lookup"), asCaller("ann"), json.RawMessage(`{"id":1}`), nil)

	// Unchanged: the same entry.
	l := loader.Load([]string{dir}, f.register(), s1, "test")
	if l.Snapshot == nil {
		t.Fatalf("reload: %v", l.Diagnostics)
	}
	s2 := l.Snapshot
	if res := call(tool(t, s2, "lookup"), asCaller("ann"), json.RawMessage(`{"id":1}`), nil); cacheStatus(res) != "hit" {
		t.Errorf("unchanged tool after a reload: cache %q, want hit", cacheStatus(res))
	}
	// Changed: a new description is a new tool.
	changed := cachedConfig(`ttl = "1h"`, "  title = \"Lookup\"\n")
	s3, _ := build(t, f.register(), s2, changed)
	if res := call(tool(t, s3, "lookup"), asCaller("ann"), json.RawMessage(`{"id":1}`), nil); cacheStatus(res) != "miss" {
		t.Errorf("changed tool after a reload: cache %q, want miss", cacheStatus(res))
	}
}

// A cache block on a tool that may write is a load error on the block.
func TestCacheLoadErrors(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"no annotation", `tool "t" {
  description = "d"
  cache {
    ttl = "1m"
  }
  fake {
    mode = "echo"
  }
}
`, `tools.hcl:3,3-8: Cache on a tool that is not read-only; Only read-only tools can be cached: a hit answers without running the tool. Tool "t" is not declared read-only: add annotations { read_only = true }`},
		{"read_only false", `tool "t" {
  description = "d"
  annotations {
    read_only = false
  }
  cache {}
  fake {
    mode = "echo"
  }
}
`, `tools.hcl:6,3-8: Cache on a tool that is not read-only; Only read-only tools can be cached: a hit answers without running the tool. Tool "t" is annotated read_only = false.`},
		{"max_bytes on a tool", `tool "t" {
  description = "d"
  annotations {
    read_only = true
  }
  cache {
    max_bytes = 100
  }
  fake {
    mode = "echo"
  }
}
`, `tools.hcl:7,5-14: max_bytes in a tool's cache block`},
		{"bad ttl", `tool "t" {
  description = "d"
  annotations {
    read_only = true
  }
  cache {
    ttl = "0s"
  }
  fake {
    mode = "echo"
  }
}
`, `tools.hcl:7,11-15: Invalid ttl; ttl must be at least 1ms`},
		{"entry over the whole", `server {
  cache {
    max_bytes       = 2048
    max_entry_bytes = 4096
  }
}
`, `tools.hcl:4,23-27: Invalid max_entry_bytes; max_entry_bytes 4096 exceeds the cache's max_bytes 2048`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "tools.hcl", tc.config)
			l := loader.Load([]string{dir}, newFake().register(), nil, "test")
			if l.Snapshot != nil {
				l.Snapshot.Close()
				t.Fatal("loaded; want an error")
			}
			var all []string
			for _, d := range l.Diagnostics {
				all = append(all, d.Error())
			}
			text := strings.Join(all, "\n")
			if !strings.Contains(text, tc.want) {
				t.Errorf("diagnostics:\n%s\nwant one containing %q", text, tc.want)
			}
		})
	}
}
