package httpadapter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/principal"
)

// BenchmarkCall measures one call of a compiled tool (path template with an
// argument, query from an argument, a JSON response decoded into
// Structured) against a local server returning a tiny JSON body. The
// baseline sub-benchmark is the same request made with a bare net/http
// client, so that the difference is the adapter's overhead.
func BenchmarkCall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"login":"octocat","id":1}`))
	}))
	defer srv.Close()

	b.Run("adapter", func(b *testing.B) {
		params := map[string]string{"login": "string", "q": "string"}
		h := adaptertest.MustCompile(b, New(), "http", adaptertest.Config{Params: params, Src: `
http_backend "api" {
  base_url = "` + srv.URL + `"
  headers  = { Accept = "application/json" }
}
http {
  backend = "api"
  path    = "/users/${args.login}"
  query   = { q = args.q }
}`})
		args := map[string]any{"login": "octocat", "q": "x y"}
		scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: params}
		req := &adapter.Request{Tool: "bench", Args: args, Eval: scope.CallContext(args), Progress: func(float64, float64, string) {}}
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			out, err := h.Call(ctx, req)
			if err != nil || out.Structured["login"] != "octocat" {
				b.Fatalf("out = %v, err = %v", out, err)
			}
		}
	})
	b.Run("net/http baseline", func(b *testing.B) {
		client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			req, _ := http.NewRequest("GET", srv.URL+"/users/octocat?q=x+y", nil)
			req.Header.Set("Accept", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 512)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
			resp.Body.Close()
		}
	})
}

// BenchmarkIdentity measures what an identity block adds to a call once
// its token is cached: the cache lookup, the Authorization header and the
// redaction of the call's tokens from the response. The server does not
// verify tokens (that is the backend's cost, not mcpd's); "none" is the
// same call without an identity.
func BenchmarkIdentity(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"login":"octocat","id":1}`))
	}))
	defer srv.Close()
	as := authtest.Start(b)
	userTok := as.Mint(authtest.Claims{Subject: "alice", Audience: []string{"https://mcp.example.com/mcp", "https://api.example.com"}})
	claims, err := as.Verify(userTok, "https://api.example.com")
	if err != nil {
		b.Fatal(err)
	}
	ctx := principal.NewContext(context.Background(), (&principal.Principal{Name: "alice", Method: "oauth", Claims: claims}).WithToken(userTok, time.Now().Add(time.Hour)))
	client := `
    token_url = "` + as.TokenURL() + `"
    client_id = "mcpd"
    client_secret = "mcpd-secret-0123456789"
    audience = "https://api.example.com"`
	for _, bc := range []struct{ name, identity string }{
		{"none", ""},
		{"client_credentials", `identity {
    mode = "client_credentials"` + client + `
  }`},
		{"token_exchange", `identity {
    mode = "token_exchange"` + client + `
  }`},
		{"passthrough", `identity {
    mode = "passthrough"
    audience = "https://api.example.com"
  }`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := adaptertest.MustCompile(b, New(), "http", adaptertest.Config{Auth: &adapter.AuthInfo{OAuth: true}, Src: `
http_backend "api" {
  base_url = "` + srv.URL + `"
  ` + bc.identity + `
}
http {
  backend = "api"
  path    = "/users/octocat"
}`})
			req := &adapter.Request{Tool: "bench", Args: map[string]any{}, Progress: func(float64, float64, string) {}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				out, err := h.Call(ctx, req)
				if err != nil || out.Structured["login"] != "octocat" {
					b.Fatalf("out = %v, err = %v", out, err)
				}
			}
		})
	}
}
