package serve

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The client's capabilities and info of a 2026-07-28 request, read once.
//
// A 2026-07-28 request carries them in its _meta, and the SDK's
// ServerRequest.ClientCapabilities and ClientInfo read them from there on
// every call: they encode the decoded JSON value again and decode it
// through the SDK's decoder, with a new 32 KiB buffer each time. The
// stateless fast path asked both to check a request (a value the SDK
// cannot read is the SDK's -32602), and mcpd's middleware asked for the
// capabilities again for every call of a tool that asks or relays (a
// gateway's): a gateway paid three such decodings per call and its mcpd
// upstream one (the clientInfo its client sends), about 4 % of the
// gateway's CPU and 63 of the 96 KB it allocated per call.
//
// A client sends the same objects on every request, so the fast path keeps
// what the SDK read of each, by its bytes: the SDK's own reading of the
// value decoded from those bytes, made once. The request's _meta still
// holds the decoded value, as the SDK's path has it, and the capabilities
// go down with the request's context (clientCaps), so that the
// middleware asks the SDK only for requests the fast path did not read.
// The values read are shared by the requests that sent the same bytes:
// like the rest of a request, they are never written.

// maxMetaCache bounds each of an endpoint's caches: a client that sends a
// new value on every request pays the SDK's reading, as before, and
// the cache stops growing.
const maxMetaCache = 64

// maxMetaCacheKey bounds the objects kept: real clients' capabilities and
// info are a few hundred bytes, and a cache that kept whatever a request
// could carry would pin maxMetaCache request bodies for the process's life.
const maxMetaCacheKey = 4 << 10

// metaCache is an endpoint's reading of the capabilities and info objects
// it was sent, by their bytes. Readers take a map that is never written
// (copy on write: the cache fills once, then is only read).
type metaCache struct {
	mu   sync.Mutex // writers
	caps atomic.Pointer[map[string]*mcp.ClientCapabilities]
	info atomic.Pointer[map[string]*mcp.Implementation]
}

// capabilities is what the SDK's ClientCapabilities returns for a request
// whose _meta holds value (decoded from raw): nil when it cannot read it.
func (c *metaCache) capabilities(raw []byte, value map[string]any) *mcp.ClientCapabilities {
	return cached(&c.mu, &c.caps, raw, func() *mcp.ClientCapabilities {
		req := &mcp.ServerRequest[*mcp.DiscoverParams]{Params: &mcp.DiscoverParams{Meta: mcp.Meta{metaClientCaps: value}}}
		return req.ClientCapabilities()
	})
}

// clientInfo is what the SDK's ClientInfo returns for a request whose
// _meta holds value (decoded from raw): nil when it cannot read it.
func (c *metaCache) clientInfo(raw []byte, value map[string]any) *mcp.Implementation {
	return cached(&c.mu, &c.info, raw, func() *mcp.Implementation {
		req := &mcp.ServerRequest[*mcp.DiscoverParams]{Params: &mcp.DiscoverParams{Meta: mcp.Meta{metaClientInfo: value}}}
		return req.ClientInfo()
	})
}

func cached[V any](mu *sync.Mutex, p *atomic.Pointer[map[string]V], raw []byte, read func() V) V {
	if m := p.Load(); m != nil {
		if v, ok := (*m)[string(raw)]; ok {
			return v
		}
	}
	v := read()
	if len(raw) > maxMetaCacheKey {
		return v
	}
	mu.Lock()
	defer mu.Unlock()
	old := p.Load()
	if old != nil && len(*old) >= maxMetaCache {
		return v
	}
	m := make(map[string]V, 1+lenOf(old))
	if old != nil {
		for k, e := range *old {
			m[k] = e
		}
	}
	m[string(raw)] = v
	p.Store(&m)
	return v
}

func lenOf[V any](m *map[string]V) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// readCaps is what the fast path read of a request's capabilities, in its
// context: params tells it from any other request under that context.
type readCaps struct {
	params mcp.Params
	caps   *mcp.ClientCapabilities
}

type readCapsKey struct{}

// withClientCaps carries the capabilities the fast path read of req.
func withClientCaps(ctx context.Context, req mcp.Request, caps *mcp.ClientCapabilities) context.Context {
	return context.WithValue(ctx, readCapsKey{}, readCaps{params: req.GetParams(), caps: caps})
}

// clientCaps is req.ClientCapabilities(), read once by the fast path
// when it served req.
func clientCaps[P mcp.Params](ctx context.Context, req *mcp.ServerRequest[P]) *mcp.ClientCapabilities {
	if rc, ok := ctx.Value(readCapsKey{}).(readCaps); ok && rc.caps != nil && rc.params == mcp.Params(req.Params) {
		return rc.caps
	}
	return req.ClientCapabilities()
}
