package mcpadapter_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaRecorder is a proxy in front of an upstream that keeps the _meta of
// every tools/call the gateway sends it.
type metaRecorder struct {
	mu    sync.Mutex
	metas []map[string]any
}

func (m *metaRecorder) proxy(t *testing.T, upstream string) string {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
			m.mu.Lock()
			m.metas = append(m.metas, msg.Params.Meta)
			m.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func (m *metaRecorder) last(t *testing.T) map[string]any {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.metas) == 0 {
		t.Fatal("the gateway sent no tools/call")
	}
	return m.metas[len(m.metas)-1]
}

// A 2026-07-28 upstream is asked for progress and log records only when
// the calling client will receive them (a request with neither is one
// mcpd's fast path answers), and sees the calling client's capabilities
// (the SDK's client declares roots), not the gateway's.
func TestUpstreamCallMeta(t *testing.T) {
	const static = `
tool "hello" {
  description = "Says hello."
  result {
    content "text" {
      text = "hello"
    }
  }
}
`
	rec := &metaRecorder{}
	up := rec.proxy(t, serveConfig(t, static))
	gw := serveConfig(t, gatewayConfig(up, modern, `
tool "hello" {
  description = "Says hello, from the upstream."
  mcp {
    server = "up"
  }
}
`))
	for _, tc := range []struct {
		name                string
		version             string
		progress, setLevel  bool
		wantToken, wantLevl bool
		opts                *mcp.ClientOptions
		wantCaps            string
	}{
		{name: "stateless, neither", version: modern, wantCaps: `{"roots":{"listChanged":true}}`},
		{name: "stateless, progress", version: modern, progress: true, wantToken: true, wantCaps: `{"roots":{"listChanged":true}}`},
		{name: "session without a level", version: legacy, wantCaps: `{"roots":{"listChanged":true}}`},
		{name: "session with a level", version: legacy, setLevel: true, wantLevl: true, wantCaps: `{"roots":{"listChanged":true}}`},
		{name: "capabilities", version: modern, opts: &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, wantCaps: `{"elicitation":{"form":{}},"roots":{"listChanged":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := connect(t, gw, tc.version, tc.opts, false)
			if tc.setLevel {
				if err := cs.SetLoggingLevel(bounded(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
					t.Fatal(err)
				}
			}
			params := &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{}}
			if tc.progress {
				params.SetProgressToken("p")
			}
			res, err := cs.CallTool(bounded(t), params)
			if err != nil || res.IsError || textOf(res) != "hello" {
				t.Fatalf("hello: %v %q", err, textOf(res))
			}
			meta := rec.last(t)
			if _, ok := meta["progressToken"]; ok != tc.wantToken {
				t.Errorf("progressToken sent: %v, want %v (%v)", ok, tc.wantToken, meta)
			}
			if _, ok := meta[mcp.MetaKeyLogLevel]; ok != tc.wantLevl {
				t.Errorf("logLevel sent: %v, want %v (%v)", ok, tc.wantLevl, meta)
			}
			if caps, _ := json.Marshal(meta[mcp.MetaKeyClientCapabilities]); string(caps) != tc.wantCaps {
				t.Errorf("clientCapabilities sent %s, want %s", caps, tc.wantCaps)
			}
		})
	}
}
