package cache_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/cache"
)

func TestKey(t *testing.T) {
	base := cache.KeyParts{Fingerprint: "fp", Tool: "t", Args: map[string]any{"a": 1.0, "b": "x"}, Principal: "api_key:ann"}
	k0, err := cache.Key(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(k0) != 64 || strings.Contains(k0, "ann") {
		t.Fatalf("key %q: want 64 hex digits, no argument or principal in clear", k0)
	}
	same := base
	same.Args = map[string]any{"b": "x", "a": 1.0}
	differ := map[string]func(p *cache.KeyParts){
		"principal":   func(p *cache.KeyParts) { p.Principal = "api_key:bob" },
		"local":       func(p *cache.KeyParts) { p.Principal = "" },
		"shared":      func(p *cache.KeyParts) { p.Shared = true },
		"fingerprint": func(p *cache.KeyParts) { p.Fingerprint = "fp2" },
		"tool":        func(p *cache.KeyParts) { p.Tool = "u" },
		"args":        func(p *cache.KeyParts) { p.Args = map[string]any{"a": 2.0, "b": "x"} },
		"inputs":      func(p *cache.KeyParts) { p.Inputs = map[string]any{"ok": true} },
		// Length prefixes: moving bytes between parts changes the key.
		"boundary": func(p *cache.KeyParts) { p.Fingerprint, p.Tool = "fpt", "" },
	}
	if k, _ := cache.Key(same); k != k0 {
		t.Errorf("argument order changed the key")
	}
	for name, change := range differ {
		p := base
		change(&p)
		if k, _ := cache.Key(p); k == k0 {
			t.Errorf("%s: same key", name)
		}
	}
	// Shared ignores the principal.
	a, b := base, base
	a.Shared, b.Shared, b.Principal = true, true, "api_key:bob"
	if ka, _ := cache.Key(a); func() string { kb, _ := cache.Key(b); return kb }() != ka {
		t.Errorf("shared entries differ by principal")
	}
}

func TestMemoryLRUBytes(t *testing.T) {
	ctx := context.Background()
	// Room for three entries of 100 bytes (plus their overhead) and not four.
	c := cache.NewMemory(3 * (100 + 256))
	put := func(k string, n int) {
		if err := c.Set(ctx, k, cache.Entry{Value: make([]byte, n), Decoded: k, At: time.Now()}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	has := func(k string) bool {
		e, err := c.Get(ctx, k)
		if errors.Is(err, cache.ErrMiss) {
			return false
		}
		if err != nil || e.Decoded != k {
			t.Fatalf("get %s: %v %v", k, e.Decoded, err)
		}
		return true
	}
	put("a", 100)
	put("b", 100)
	put("c", 100)
	has("a") // a is now more recent than b
	put("d", 100)
	if has("b") {
		t.Error("b (least recently used) was not evicted")
	}
	for _, k := range []string{"a", "c", "d"} {
		if !has(k) {
			t.Errorf("%s was evicted", k)
		}
	}
	st := c.Stats()
	if st.Entries != 3 || st.Bytes != 3*356 || st.Evictions != 1 {
		t.Errorf("stats %+v, want 3 entries, %d bytes, 1 eviction", st, 3*356)
	}
	// A value larger than the whole store is not stored and evicts nothing.
	put("huge", 4000)
	if has("huge") || c.Stats().Entries != 3 {
		t.Errorf("an entry over the bound was stored or evicted others: %+v", c.Stats())
	}
	// One large entry evicts as many as it needs.
	put("big", 2*356)
	if c.Stats().Bytes > c.MaxBytes() {
		t.Errorf("over the bound: %+v", c.Stats())
	}
	if !has("big") {
		t.Error("big was not stored")
	}
}

func TestMemoryTTL(t *testing.T) {
	ctx := context.Background()
	c := cache.NewMemory(1 << 20)
	c.Set(ctx, "k", cache.Entry{Value: []byte("v"), At: time.Now().Add(-time.Minute)}, 30*time.Second)
	if _, err := c.Get(ctx, "k"); !errors.Is(err, cache.ErrMiss) {
		t.Errorf("an entry computed a minute ago with a 30s TTL: %v, want a miss", err)
	}
	if c.Stats().Entries != 0 {
		t.Error("the expired entry is still held")
	}
}
