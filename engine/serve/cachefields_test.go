package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/serve"
)

// ttlMs and cacheScope are fields of the 2026-07-28 protocol: list and read
// results carry them to 2026 clients only. Checked on the wire, as go-sdk
// clients of each era read it, over stdio and HTTP.
func TestCacheFieldsOnlyFor2026(t *testing.T) {
	transports := []struct {
		name string
		make func(t *testing.T, e *env) mcp.Transport
	}{
		{"stdio", func(t *testing.T, e *env) mcp.Transport {
			ct, st := mcp.NewInMemoryTransports()
			ss, err := e.srv.SDK().Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ss.Close() })
			return ct
		}},
		{"http", func(t *testing.T, e *env) mcp.Transport {
			ts := e.httpServer(t, serve.HTTPOptions{})
			return &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}
		}},
	}
	for _, tr := range transports {
		for _, version := range []string{legacy, modern} {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				e := newEnv(t)
				var wire syncBuffer
				cs := connect(t, &mcp.LoggingTransport{Transport: tr.make(t, e), Writer: &wire}, version, nil)
				ctx := bounded(t)
				if _, err := cs.ListTools(ctx, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := cs.ListPrompts(ctx, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := cs.ListResources(ctx, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := cs.ListResourceTemplates(ctx, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://readme"}); err != nil {
					t.Fatal(err)
				}
				results := 0
				for _, line := range strings.Split(wire.String(), "\n") {
					raw, ok := strings.CutPrefix(line, "read: ")
					if !ok {
						continue
					}
					var msg struct {
						Result map[string]json.RawMessage `json:"result"`
					}
					if json.Unmarshal([]byte(raw), &msg) != nil || msg.Result == nil {
						continue
					}
					_, isList := msg.Result["tools"]
					for _, k := range []string{"prompts", "resources", "resourceTemplates", "contents"} {
						_, has := msg.Result[k]
						isList = isList || has
					}
					if !isList {
						continue
					}
					results++
					_, ttl := msg.Result["ttlMs"]
					_, scope := msg.Result["cacheScope"]
					if want := version == modern; ttl != want || scope != want {
						t.Errorf("ttlMs present %v, cacheScope present %v, want %v: %s", ttl, scope, want, raw)
					}
				}
				if results != 5 {
					t.Errorf("saw %d list/read results on the wire, want 5:\n%s", results, wire.String())
				}
			})
		}
	}
}
