package cache

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/sharedstate"
)

// The result cache (docs/config.md, "cache"; docs/operations.md, "Caching
// with replicas"): the stage of a call that answers a read-only tool's
// repeated call from a Store. engine/snapshot compiles the cache blocks
// into a Tool and calls Lookup and Fill.
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
// reaches the cache in clear; keys are hashes (Key), so no argument
// does either. Tool errors and input_required results are never stored.

// Defaults of the cache (docs/config.md).
const (
	DefaultTTL           = 30 * time.Second
	DefaultMaxEntryBytes = 1 << 20  // 1 MiB
	DefaultMaxBytes      = 64 << 20 // 64 MiB
)

// MetaKey is the _meta key of a cacheable tool's result: a *Meta, saying
// whether the answer was served from the cache.
const MetaKey = "mcpd/cache"

// Meta is the _meta of a cacheable tool's result. Its ttlMs and
// cacheScope mean what the 2026-07-28 protocol's list results' fields of
// the same names do (engine/serve/cachefields.go): how long the answer may
// be reused, and whether it is the caller's own ("private") or shared by
// every caller ("public").
type Meta struct {
	Hit bool `json:"hit"`
	// AgeMs is how long ago the cached answer was computed (hits only).
	AgeMs      int64  `json:"ageMs,omitempty"`
	TTLMs      int64  `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`

	status string // Hit, Miss or Error
}

// Cache statuses of a call (event.Call.Cache, the audit line, the
// metrics).
const (
	Hit  = "hit"
	Miss = "miss"
	// Error: the store failed (Redis down); the tool was called.
	Error = "error"
)

// Status returns the cache status of a tool's result: Hit, Miss, Error,
// or "" for a tool that is not cached (and for errors, which never are).
func Status(res *mcp.CallToolResult) string {
	if res == nil || res.Meta == nil {
		return ""
	}
	if m, ok := res.Meta[MetaKey].(*Meta); ok {
		return m.status
	}
	return ""
}

// Tool is a cached tool's cache settings and the store it uses.
type Tool struct {
	TTL      time.Duration
	Shared   bool
	MaxEntry int
	// Fingerprint is the tool's compiled definition, part of every key
	// (engine/snapshot's toolFingerprint).
	Fingerprint string
	// Store is set by the snapshot's Build once its store is known.
	Store Store
}

// Fill is a miss to be stored once the result is known.
type Fill struct {
	key string
}

func (c *Tool) scope() string {
	if c.Shared {
		return "public"
	}
	return "private"
}

// Lookup returns the cached result of a call, or nil and the fill to do
// once the call has run (nil when the store failed: the call runs without
// the cache, and its status is Error). principal is the caller's
// identity, which keys the entry of a tool that is not Shared ("" for one
// that is).
func (c *Tool) Lookup(ctx context.Context, tool string, args, inputs map[string]any, principal string, budget *sharedstate.Budget) (*mcp.CallToolResult, *Fill, string) {
	parts := KeyParts{Fingerprint: c.Fingerprint, Tool: tool, Args: args, Inputs: inputs, Shared: c.Shared, Principal: principal}
	key, err := Key(parts)
	if err != nil {
		// Arguments that do not encode (cannot happen for JSON input):
		// run uncached.
		return nil, nil, Error
	}
	if budget.Spent() {
		return nil, nil, Error
	}
	octx, cancel := c.opContext(ctx, budget)
	e, err := c.Store.Get(octx, key)
	cancel()
	switch {
	case errors.Is(err, ErrMiss):
		return nil, &Fill{key: key}, Miss
	case err != nil:
		// While Redis is known to be down, or did not answer within the
		// call's budget, the shared state logs its transitions; each call
		// does not.
		if !errors.Is(err, ErrUnavailable) && !sharedstate.IsUnavailable(err) {
			slog.Warn("result cache unavailable; calling the tool", "tool", tool, "store", c.Store.Kind(), "err", err)
		}
		return nil, nil, Error
	}
	var cached *mcp.CallToolResult
	if r, ok := e.Decoded.(*mcp.CallToolResult); ok {
		cached = r
	} else {
		var err error
		if cached, err = decodeResult(e.Value); err != nil {
			// Not a result this version can read: a miss, overwritten.
			return nil, &Fill{key: key}, Miss
		}
	}
	out := *cached
	age := time.Since(e.At).Milliseconds()
	if age < 0 {
		age = 0 // another replica's clock
	}
	out.Meta = mcp.Meta{MetaKey: &Meta{Hit: true, AgeMs: age, TTLMs: c.TTL.Milliseconds(), CacheScope: c.scope(), status: Hit}}
	return &out, nil, Hit
}

// opContext is the context of an operation of a shared store: not
// cancelled with the call (a result is stored after the call's timeout
// has been released), bounded by what is left of the call's budget for
// the shared state (sharedstate.Budget), and by the state block's timeout,
// which the client applies to every command. The memory store needs no
// context.
func (c *Tool) opContext(ctx context.Context, budget *sharedstate.Budget) (context.Context, func()) {
	if _, ok := c.Store.(*Memory); ok {
		return ctx, func() {}
	}
	return budget.Op(context.WithoutCancel(ctx))
}

// Fill stores res, the redacted result of a miss, unless it is an error or
// a question (input_required), and marks it with its status.
func (c *Tool) Fill(ctx context.Context, tool string, f *Fill, status string, res *mcp.CallToolResult, budget *sharedstate.Budget) *mcp.CallToolResult {
	if res == nil || res.IsError || res.InputRequests != nil || res.RequestState != "" {
		return res
	}
	if f != nil && budget.Spent() {
		// The call spent its time for the shared state: not stored.
		f, status = nil, Error
	}
	if f != nil {
		stored := *res
		stored.Meta = nil
		b, err := json.Marshal(&stored)
		if err == nil && len(b) <= c.MaxEntry {
			octx, cancel := c.opContext(ctx, budget)
			err = c.Store.Set(octx, f.key, Entry{Value: b, Decoded: &stored, At: time.Now()}, c.TTL)
			cancel()
			if err != nil {
				if !errors.Is(err, ErrUnavailable) && !sharedstate.IsUnavailable(err) {
					slog.Warn("result cache unavailable; the result is not stored", "tool", tool, "store", c.Store.Kind(), "err", err)
				}
				status = Error
			}
		}
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta[MetaKey] = &Meta{TTLMs: c.TTL.Milliseconds(), CacheScope: c.scope(), status: status}
	return res
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
