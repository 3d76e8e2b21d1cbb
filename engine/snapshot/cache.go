package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/cache"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/sharedstate"
)

// The result cache (docs/config.md, "cache"; docs/operations.md, "Caching
// with replicas").
//
// Where it sits in a call: after the arguments are validated (defaults
// applied), the caller-bound params bound and the ask blocks answered —
// everything the result depends on is known then — and before the limits.
// A hit neither takes a rate-limit token nor a concurrency slot: both
// protect the backend, which a hit does not reach, and a hit is meant to
// be cheap. A caller who repeats a call gets the same answer, which costs
// the backend nothing.
//
// What is stored is the result as the model saw it: redacted and with
// sensitive arguments scrubbed, so a secret that redaction hides never
// reaches the cache in clear; keys are hashes (cache.Key), so no argument
// does either. Tool errors and input_required results are never stored.

// Defaults of the cache (docs/config.md).
const (
	DefaultCacheTTL           = 30 * time.Second
	DefaultCacheMaxEntryBytes = 1 << 20  // 1 MiB
	DefaultCacheMaxBytes      = 64 << 20 // 64 MiB
)

// CacheMetaKey is the _meta key of a cacheable tool's result: a
// *CacheMeta, saying whether the answer was served from the cache.
const CacheMetaKey = "mcpd/cache"

// CacheMeta is the _meta of a cacheable tool's result. Its ttlMs and
// cacheScope mean what the 2026-07-28 protocol's list results' fields of
// the same names do (engine/serve/cachefields.go): how long the answer may
// be reused, and whether it is the caller's own ("private") or shared by
// every caller ("public").
type CacheMeta struct {
	Hit bool `json:"hit"`
	// AgeMs is how long ago the cached answer was computed (hits only).
	AgeMs      int64  `json:"ageMs,omitempty"`
	TTLMs      int64  `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`

	status string // CacheHit, CacheMiss or CacheError
}

// Cache statuses of a call (event.Call.Cache, the audit line, the
// metrics).
const (
	CacheHit  = "hit"
	CacheMiss = "miss"
	// CacheError: the store failed (Redis down); the tool was called.
	CacheError = "error"
)

// CacheStatus returns the cache status of a tool's result: CacheHit,
// CacheMiss, CacheError, or "" for a tool that is not cached (and for
// errors, which never are).
func CacheStatus(res *mcp.CallToolResult) string {
	if res == nil || res.Meta == nil {
		return ""
	}
	if m, ok := res.Meta[CacheMetaKey].(*CacheMeta); ok {
		return m.status
	}
	return ""
}

// serverCache is the server block's cache block: the defaults of the
// tools' blocks and the memory store's bound.
type serverCache struct {
	ttl      time.Duration
	shared   bool
	maxEntry int
	maxBytes int64
}

func compileServerCache(sv *config.Server) (serverCache, hcl.Diagnostics) {
	out := serverCache{ttl: DefaultCacheTTL, maxEntry: DefaultCacheMaxEntryBytes, maxBytes: DefaultCacheMaxBytes}
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

// toolCache is a cached tool's cache settings and the store it uses.
type toolCache struct {
	ttl      time.Duration
	shared   bool
	maxEntry int
	// fingerprint is the tool's compiled definition, part of every key
	// (see toolFingerprint).
	fingerprint string
	// store is set by Build once the snapshot's store is known.
	store cache.Store
}

// compileCache compiles a tool's cache block; nil without one. A tool that
// may change something cannot be cached: a load error on the block.
func compileCache(tc *config.Tool, h adapter.Handler, sc serverCache) (*toolCache, hcl.Diagnostics) {
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
	out := &toolCache{ttl: sc.ttl, shared: sc.shared, maxEntry: sc.maxEntry}
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
	if out.shared && adapter.TraitsOf(h).ActsAsCaller {
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

// cacheFill is a miss to be stored once the result is known.
type cacheFill struct {
	key string
}

func (c *toolCache) scope() string {
	if c.shared {
		return "public"
	}
	return "private"
}

// lookup returns the cached result of a call, or nil and the fill to do
// once the call has run (nil when the store failed: the call runs without
// the cache, and its status is CacheError).
func (c *toolCache) lookup(ctx context.Context, tool string, args, inputs map[string]any, caller *principal.Principal, budget *sharedstate.Budget) (*mcp.CallToolResult, *cacheFill, string) {
	parts := cache.KeyParts{Fingerprint: c.fingerprint, Tool: tool, Args: args, Inputs: inputs, Shared: c.shared}
	if !c.shared {
		parts.Principal = callerID(caller)
	}
	key, err := cache.Key(parts)
	if err != nil {
		// Arguments that do not encode (cannot happen for JSON input):
		// run uncached.
		return nil, nil, CacheError
	}
	if budget.Spent() {
		return nil, nil, CacheError
	}
	octx, cancel := c.opContext(ctx, budget)
	e, err := c.store.Get(octx, key)
	cancel()
	switch {
	case errors.Is(err, cache.ErrMiss):
		return nil, &cacheFill{key: key}, CacheMiss
	case err != nil:
		// While Redis is known to be down, or did not answer within the
		// call's budget, the shared state logs its transitions; each call
		// does not.
		if !errors.Is(err, cache.ErrUnavailable) && !sharedstate.IsUnavailable(err) {
			slog.Warn("result cache unavailable; calling the tool", "tool", tool, "store", c.store.Kind(), "err", err)
		}
		return nil, nil, CacheError
	}
	var cached *mcp.CallToolResult
	if r, ok := e.Decoded.(*mcp.CallToolResult); ok {
		cached = r
	} else {
		var err error
		if cached, err = decodeResult(e.Value); err != nil {
			// Not a result this version can read: a miss, overwritten.
			return nil, &cacheFill{key: key}, CacheMiss
		}
	}
	out := *cached
	age := time.Since(e.At).Milliseconds()
	if age < 0 {
		age = 0 // another replica's clock
	}
	out.Meta = mcp.Meta{CacheMetaKey: &CacheMeta{Hit: true, AgeMs: age, TTLMs: c.ttl.Milliseconds(), CacheScope: c.scope(), status: CacheHit}}
	return &out, nil, CacheHit
}

// opContext is the context of an operation of a shared store: not
// cancelled with the call (a result is stored after the call's timeout
// has been released), bounded by what is left of the call's budget for
// the shared state (sharedstate.Budget), and by the state block's timeout,
// which the client applies to every command. The memory store needs no
// context.
func (c *toolCache) opContext(ctx context.Context, budget *sharedstate.Budget) (context.Context, func()) {
	if _, ok := c.store.(*cache.Memory); ok {
		return ctx, func() {}
	}
	return budget.Op(context.WithoutCancel(ctx))
}

// fill stores res, the redacted result of a miss, unless it is an error or
// a question (input_required), and marks it with its status.
func (c *toolCache) fill(ctx context.Context, tool string, f *cacheFill, status string, res *mcp.CallToolResult, budget *sharedstate.Budget) *mcp.CallToolResult {
	if res == nil || res.IsError || res.InputRequests != nil || res.RequestState != "" {
		return res
	}
	if f != nil && budget.Spent() {
		// The call spent its time for the shared state: not stored.
		f, status = nil, CacheError
	}
	if f != nil {
		stored := *res
		stored.Meta = nil
		b, err := json.Marshal(&stored)
		if err == nil && len(b) <= c.maxEntry {
			octx, cancel := c.opContext(ctx, budget)
			err = c.store.Set(octx, f.key, cache.Entry{Value: b, Decoded: &stored, At: time.Now()}, c.ttl)
			cancel()
			if err != nil {
				if !errors.Is(err, cache.ErrUnavailable) && !sharedstate.IsUnavailable(err) {
					slog.Warn("result cache unavailable; the result is not stored", "tool", tool, "store", c.store.Kind(), "err", err)
				}
				status = CacheError
			}
		}
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta[CacheMetaKey] = &CacheMeta{TTLMs: c.ttl.Milliseconds(), CacheScope: c.scope(), status: status}
	return res
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
		t.cache.fingerprint = toolFingerprint(decls[t.Def.Name], cfg, backends, secs)
		t.cache.store = store
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
	return t.cache.maxEntry
}

// wireResult is a stored result as decodeResult reads it: the structured
// content is kept as its JSON, which is how it is sent again, and the
// contents one by one.
type wireResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent"`
}

// wireText is a content block read as text content; any other field makes
// it a block for the SDK to decode.
type wireText struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Annotations json.RawMessage `json:"annotations"`
	Meta        json.RawMessage `json:"_meta"`
}

// decodeResult decodes a result a shared store returned. It costs a
// fraction of the SDK's CallToolResult.UnmarshalJSON, which decoded the
// structured content into maps only for it to be encoded again: text
// blocks (nearly every result) are decoded here, the structured content
// is kept as JSON, and only other blocks go through the SDK.
func decodeResult(b []byte) (*mcp.CallToolResult, error) {
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	out := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(w.Content))}
	for _, raw := range w.Content {
		var t wireText
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, err
		}
		if t.Type == "text" && t.Annotations == nil && t.Meta == nil {
			out.Content = append(out.Content, &mcp.TextContent{Text: t.Text})
			continue
		}
		var one mcp.CallToolResult
		if err := json.Unmarshal([]byte(`{"content":[`+string(raw)+`]}`), &one); err != nil {
			return nil, err
		}
		out.Content = append(out.Content, one.Content...)
	}
	if len(w.StructuredContent) > 0 && string(w.StructuredContent) != "null" {
		out.StructuredContent = w.StructuredContent
	}
	return out, nil
}
