package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpd/mcpd/engine/discovery"
)

// The Server Card of each endpoint (SEP-2127, the MCP Server Card
// extension) is served at <endpoint>/server-card: /mcp/server-card for
// /mcp, /mcp/<toolset>/server-card for a toolset's. It is built from the
// current snapshot on every request, so a reload changes it at once.
//
// It is public, like the Protected Resource Metadata: a client reads it to
// learn how to authenticate before it can. It names no tool, resource or
// prompt (the extension leaves those to runtime listing), so a toolset's
// card tells a caller without its scopes nothing beyond the toolset's name
// and description. The Host and Origin checks of /mcp apply (front.guard):
// a card names the server and its URL, which a DNS-rebinding page must not
// read off a local server.

// cardMaxAge is how long a client may reuse a card without asking: short,
// since a reload may change it (the ETag makes asking again cheap).
const cardMaxAge = "public, max-age=300"

// cardPath reports whether path is an endpoint's Server Card, and which
// endpoint's: "" for /mcp/server-card, the toolset for
// /mcp/<toolset>/server-card.
func cardPath(path string) (toolset string, ok bool) {
	rest, under := strings.CutPrefix(path, "/mcp")
	if !under {
		return "", false
	}
	ep, found := strings.CutSuffix(rest, discovery.CardSuffix)
	switch {
	case !found:
		return "", false
	case ep == "":
		return "", true
	case strings.HasPrefix(ep, "/") && len(ep) > 1 && !strings.Contains(ep[1:], "/"):
		return ep[1:], true
	}
	return "", false
}

// serveCard answers a request for the Server Card of toolset's endpoint.
func (f *front) serveCard(w http.ResponseWriter, r *http.Request, toolset string) {
	h := w.Header()
	// CORS as the extension requires of discovery documents: a browser
	// client may read the card (an Origin this server refuses was already
	// answered 403 by the guard).
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "Method Not Allowed: a Server Card is read with GET", http.StatusMethodNotAllowed)
		return
	}
	snap := f.s.current.Load()
	card, ok := discovery.CardFor(snap, toolset, endpointURL(r, snap.Auth.Requirements().Resource, toolset))
	if !ok {
		http.Error(w, fmt.Sprintf("Not Found: no toolset is named %q", toolset), http.StatusNotFound)
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(card); err != nil {
		http.Error(w, "cannot encode the server card", http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(buf.Bytes())
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
	h.Set("Content-Type", discovery.CardMediaType)
	h.Set("Cache-Control", cardMaxAge)
	h.Set("ETag", etag)
	// The card's URL comes from Host and X-Forwarded-Proto.
	h.Set("Vary", "Host, X-Forwarded-Proto")
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", fmt.Sprint(buf.Len()))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(buf.Bytes())
}

// endpointURL is the URL a client reaches the endpoint of toolset at: the
// auth block's resource when it names /mcp (what clients are told to
// use), else this request's scheme and Host.
func endpointURL(r *http.Request, resource, toolset string) string {
	suffix := "/mcp"
	if toolset != "" {
		suffix += "/" + toolset
	}
	if base, ok := strings.CutSuffix(strings.TrimSuffix(resource, "/"), "/mcp"); ok && base != "" {
		return base + suffix
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host + suffix
}

// etagMatch reports whether an If-None-Match header names etag (or *).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
