package serve_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/serve"
)

const cardTestConfig = `
server {
  name        = "com.example/cards"
  description = "Cards for tests."
  icon {
    src = "https://example.com/c.png"
  }
}
tool "echo" {
  description = "echo"
  result {
    content "text" {
      text = "x"
    }
  }
}
toolset "one" {
  tools = ["echo"]
}
`

// The Server Card routes: which paths are cards, which methods read them,
// and that a card path never reaches the MCP handlers.
func TestServerCardRoutes(t *testing.T) {
	e := newEnvConfig(t, cardTestConfig)
	h := e.srv.HTTPHandler(serve.HTTPOptions{})
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		want         int
		name         string // the card's, when 200 with a body
	}{
		{"GET", "/mcp/server-card", nil, 200, "com.example/cards"},
		{"GET", "/mcp/one/server-card", nil, 200, "com.example/cards-one"},
		{"HEAD", "/mcp/server-card", nil, 200, ""},
		{"OPTIONS", "/mcp/server-card", map[string]string{"Origin": "http://localhost:3000"}, 204, ""},
		{"POST", "/mcp/server-card", nil, 405, ""},
		{"DELETE", "/mcp/one/server-card", nil, 405, ""},
		{"GET", "/mcp/two/server-card", nil, 404, ""},
		{"GET", "/mcp/one/two/server-card", nil, 404, ""},
		{"GET", "/mcp/server-card", map[string]string{"Origin": "https://evil.example"}, 403, ""},
		{"GET", "/mcp/server-card", map[string]string{"Host": "evil.example"}, 403, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "http://127.0.0.1:8080"+tc.path, nil)
			req.Host = "127.0.0.1:8080"
			for k, v := range tc.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.name == "" {
				if tc.method == "HEAD" && (w.Body.Len() != 0 || w.Header().Get("Content-Length") == "") {
					t.Errorf("HEAD: body %q, Content-Length %q", w.Body, w.Header().Get("Content-Length"))
				}
				return
			}
			var card struct {
				Name    string
				Remotes []struct{ URL string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &card); err != nil {
				t.Fatal(err)
			}
			if card.Name != tc.name || !strings.HasPrefix(card.Remotes[0].URL, "http://127.0.0.1:8080/mcp") {
				t.Errorf("card %+v", card)
			}
		})
	}
	// Behind TLS, or a proxy that says it terminated TLS, the URL is https.
	req := httptest.NewRequest("GET", "http://mcp.example.com/mcp/server-card", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	w := httptest.NewRecorder()
	e.srv.HTTPHandler(serve.HTTPOptions{AllowedHosts: []string{"mcp.example.com"}}).ServeHTTP(w, req)
	if !strings.Contains(w.Body.String(), `"url": "https://mcp.example.com/mcp"`) {
		t.Errorf("behind a TLS proxy: %s", w.Body)
	}
}

// BenchmarkServerCard is the cost of one card request: built from the
// snapshot, encoded, hashed for its ETag.
func BenchmarkServerCard(b *testing.B) {
	e := newEnvConfig(b, cardTestConfig)
	h := e.srv.HTTPHandler(serve.HTTPOptions{})
	req := httptest.NewRequest("GET", "http://127.0.0.1:8080/mcp/server-card", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
