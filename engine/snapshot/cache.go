package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/cache"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/principal"
)

// Compiling the result cache's blocks (the stage itself, which a call
// runs, is engine/cache's Tool; docs/config.md, "cache").

// serverCache is the server block's cache block: the defaults of the
// tools' blocks and the memory store's bound.
type serverCache struct {
	ttl      time.Duration
	shared   bool
	maxEntry int
	maxBytes int64
}

func compileServerCache(sv *config.Server) (serverCache, hcl.Diagnostics) {
	out := serverCache{ttl: cache.DefaultTTL, maxEntry: cache.DefaultMaxEntryBytes, maxBytes: cache.DefaultMaxBytes}
	if sv == nil || sv.Cache == nil {
		return out, nil
	}
	c := sv.Cache
	var diags hcl.Diagnostics
	if c.TTL != nil {
		d, dd := cacheTTL(c.TTL)
		diags = append(diags, dd...)
		out.ttl = d
	}
	if c.Shared != nil {
		b, dd := staticBool(c.Shared)
		diags = append(diags, dd...)
		out.shared = b
	}
	if c.MaxEntryBytes != nil {
		n, dd := staticCount(c.MaxEntryBytes, 1, 1<<30)
		diags = append(diags, dd...)
		out.maxEntry = n
	}
	if c.MaxBytes != nil {
		n, dd := staticCount(c.MaxBytes, 1024, 1<<40)
		diags = append(diags, dd...)
		out.maxBytes = int64(n)
	}
	if !diags.HasErrors() && int64(out.maxEntry) > out.maxBytes {
		diags = append(diags, attrDiag(c.MaxEntryBytes, fmt.Sprintf("max_entry_bytes %d exceeds the cache's max_bytes %d", out.maxEntry, out.maxBytes)))
	}
	return out, diags
}

func cacheTTL(a *hcl.Attribute) (time.Duration, hcl.Diagnostics) {
	d, diags := staticDuration(a, nil)
	if !diags.HasErrors() && d < time.Millisecond {
		diags = append(diags, attrDiag(a, "ttl must be at least 1ms; remove the cache block not to cache"))
	}
	return d, diags
}

func staticBool(a *hcl.Attribute) (bool, hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return false, d
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool {
		return false, hcl.Diagnostics{attrDiag(a, a.Name+" must be true or false")}
	}
	return v.True(), nil
}

// compileCache compiles a tool's cache block; nil without one. A tool that
// may change something cannot be cached: a load error on the block.
func compileCache(tc *config.Tool, h adapter.Handler, sc serverCache) (*cache.Tool, hcl.Diagnostics) {
	c := tc.Cache
	if c == nil {
		return nil, nil
	}
	var diags hcl.Diagnostics
	if why := notReadOnly(tc, h); why != "" {
		rng := c.DeclRange
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cache on a tool that is not read-only",
			Detail:   fmt.Sprintf("Only read-only tools can be cached: a hit answers without running the tool. Tool %q %s.", tc.Name, why),
			Subject:  &rng,
		})
	}
	out := &cache.Tool{TTL: sc.ttl, Shared: sc.shared, MaxEntry: sc.maxEntry}
	if c.TTL != nil {
		d, dd := cacheTTL(c.TTL)
		diags = append(diags, dd...)
		out.TTL = d
	}
	if c.Shared != nil {
		b, dd := staticBool(c.Shared)
		diags = append(diags, dd...)
		out.Shared = b
	}
	if c.MaxEntryBytes != nil {
		n, dd := staticCount(c.MaxEntryBytes, 1, 1<<30)
		diags = append(diags, dd...)
		out.MaxEntry = n
	}
	if out.Shared && adapter.TraitsOf(h).ActsAsCaller {
		rng := c.DeclRange
		if c.Shared != nil {
			rng = c.Shared.Range
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Shared cache on a tool that acts as the caller",
			Detail:   fmt.Sprintf("Tool %q reaches its backend with the caller's own identity (its identity block), so the backend answers each caller after their own permissions: a shared entry would serve one caller's result to another. Set shared = false in this cache block (the server's cache block sets shared = true for every tool that does not say otherwise).", tc.Name),
			Subject:  &rng,
		})
	}
	if c.MaxBytes != nil {
		rng := c.MaxBytes.NameRange
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "max_bytes in a tool's cache block",
			Detail:  "max_bytes bounds the whole cache, which the tools share: set it in the server block's cache block; a tool sets max_entry_bytes.",
			Subject: &rng,
		})
	}
	return out, diags
}

// notReadOnly says why a tool may change something, or "" when it only
// reads: its adapter says so (Traits.ReadOnly, such as a sql
// block's read_only), or, for an adapter that cannot tell, the tool's
// annotations declare read_only = true.
func notReadOnly(tc *config.Tool, h adapter.Handler) string {
	ann := tc.Annotations
	if ann != nil && ann.ReadOnly != nil && !*ann.ReadOnly {
		return "is annotated read_only = false"
	}
	if ro := adapter.TraitsOf(h).ReadOnly; ro != nil {
		if !*ro {
			return fmt.Sprintf("may write: its %s block sets read_only = false", tc.Adapter.Type)
		}
		return ""
	}
	if ann == nil || ann.ReadOnly == nil {
		return "is not declared read-only: add annotations { read_only = true } if its calls change nothing"
	}
	return ""
}

// toolFingerprint hashes what a tool's results depend on in the config:
// the tool block's source text, the settings of every backend (a reload
// that points a backend elsewhere), and the values of env() and file()
// calls (a reload that changes a secret or a file the text names). A
// reload that changes none of them keeps the tool's entries; any change
// makes new keys, and the old entries are never read again (they age out).
func toolFingerprint(tc *config.Tool, cfg *config.Config, backendFPs, secrets []string) string {
	h := sha256.New()
	src := cfg.Sources[tc.DeclRange.Filename]
	var text []byte
	if body, ok := tc.Remain.(*hclsyntax.Body); ok {
		start, end := tc.DeclRange.Start.Byte, body.SrcRange.End.Byte
		if start >= 0 && start <= end && end <= len(src) {
			text = src[start:end]
		}
	}
	if text == nil {
		// Not native syntax (JSON): the whole file stands for the tool.
		text = src
	}
	fmt.Fprintf(h, "%s\x00%d\x00", tc.Name, len(text))
	h.Write(text)
	for _, s := range backendFPs {
		fmt.Fprintf(h, "\x00b%d\x00%s", len(s), s)
	}
	for _, s := range secrets {
		fmt.Fprintf(h, "\x00s%d\x00%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fingerprintInputs are the parts of toolFingerprint shared by every tool
// of a Build, sorted.
func fingerprintInputs(s *Snapshot, secrets []string) (backends, secretsSorted []string) {
	for key, lb := range s.backends {
		backends = append(backends, key+"="+lb.fingerprint)
	}
	slices.Sort(backends)
	secretsSorted = slices.Clone(secrets)
	slices.Sort(secretsSorted)
	return backends, secretsSorted
}

// cacheCaller is the identity that keys a cached call's entry: the
// caller's, unless the tool's entries are shared by every caller.
func cacheCaller(c *cache.Tool, p *principal.Principal) string {
	if c.Shared {
		return ""
	}
	return callerID(p)
}

// initCache gives every cached tool its fingerprint and the store: Redis
// when the server has a state block, so that replicas share results;
// otherwise the in-memory LRU, taken over from prev when its bound is
// unchanged, so that a reload keeps the entries of the tools it does not
// change.
func (s *Snapshot) initCache(cfg *config.Config, prev *Snapshot, sc serverCache, secrets []string) {
	var cached []*Tool
	for _, t := range s.Tools {
		if t.cache != nil {
			cached = append(cached, t)
		}
	}
	if len(cached) == 0 {
		return
	}
	var store cache.Store
	if st := s.state; st != nil {
		// Each tool's max_entry_bytes bounds what it stores; the store's
		// own bound is the largest allowed.
		// The values are bound to their keys with the deployment's
		// secret when it has one (cache.Redis).
		var secret []byte
		if cfg.Server != nil {
			secret = []byte(cfg.Server.RequestStateKey)
		}
		store = cache.NewRedis(st, func(h string) string { return st.Key("cache", h) }, 1<<30, secret)
	} else {
		if prev != nil && prev.memCache != nil && prev.memCache.MaxBytes() == sc.maxBytes {
			s.memCache = prev.memCache
		} else {
			s.memCache = cache.NewMemory(sc.maxBytes)
		}
		store = s.memCache
	}
	decls := make(map[string]*config.Tool, len(cfg.Tools))
	for _, tc := range cfg.Tools {
		decls[tc.Name] = tc
	}
	backends, secs := fingerprintInputs(s, secrets)
	for _, t := range cached {
		t.cache.Fingerprint = toolFingerprint(decls[t.Def.Name], cfg, backends, secs)
		t.cache.Store = store
		t.state = s.state
	}
}

// MemoryCache is the snapshot's in-memory result cache, for its metrics;
// nil when no tool is cached.
func (s *Snapshot) MemoryCache() *cache.Memory { return s.memCache }

// CacheMaxEntryBytes is the bound of one entry of tool's cache, 0 when the
// tool is not cached.
func (t *Tool) CacheMaxEntryBytes() int {
	if t.cache == nil {
		return 0
	}
	return t.cache.MaxEntry
}
