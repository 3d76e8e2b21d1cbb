package mcpadapter_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An HTTP upstream that answers with a redirect is refused, not followed:
// its configured headers (its secrets) never reach the address the
// redirect names, that address's tools are never served as the
// upstream's, and the call fails with an error that names the upstream and
// the Location. Real parts: a go-sdk MCP server elsewhere that records the
// headers it is sent, an upstream address that redirects every request to
// it, mcpd serving the gateway, and a go-sdk client of either era.

const (
	upstreamSecret = "Bearer s3cr3t-of-the-upstream"
	upstreamKey    = "k3y-of-the-upstream"
)

// elsewhere is an MCP server at another address, with a tool of its own,
// that records the credentials it is sent.
type elsewhere struct {
	url string

	mu       sync.Mutex
	requests int
	leaked   []string
}

func newElsewhere(t *testing.T, version string) *elsewhere {
	t.Helper()
	e := &elsewhere{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "elsewhere", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered elsewhere"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "planted"}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: version == modern})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.requests++
		for _, v := range []string{r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")} {
			if v != "" {
				e.leaked = append(e.leaked, v)
			}
		}
		e.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

func (e *elsewhere) seen() (requests int, leaked []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.requests, append([]string(nil), e.leaked...)
}

// redirecting answers every request with a redirect of status code to
// target (the same path).
func redirecting(t *testing.T, code int, target string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, code)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func redirectGateway(url, version string) string {
	return fmt.Sprintf(`
mcp_server "up" {
  url              = "%s/mcp"
  protocol_version = %q
  connect_timeout  = "2s"
  headers = {
    Authorization = %q
    X-Api-Key     = %q
  }
  expose {
    prefix = "up_"
  }
}

tool "greet" {
  description = "Greets, through the upstream."
  mcp {
    server = "up"
  }
}
`, url, version, upstreamSecret, upstreamKey)
}

func TestUpstreamRedirectRefused(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		for _, code := range []int{http.StatusTemporaryRedirect, map[string]int{legacy: http.StatusFound, modern: http.StatusPermanentRedirect}[version]} {
			t.Run(fmt.Sprintf("%s/%d", version, code), func(t *testing.T) {
				other := newElsewhere(t, version)
				gw := serveConfig(t, redirectGateway(redirecting(t, code, other.url), version))
				want := fmt.Sprintf(`upstream "up": redirected to %s/mcp (status %d); mcpd does not follow redirects: set url to the final address`, other.url, code)

				// A client that cannot be asked calls on the upstream's
				// session; one that can be asked on a pooled session of
				// its own (an HTTP upstream's): both are refused.
				for _, opts := range []*mcp.ClientOptions{nil, {ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}}} {
					cs := connect(t, gw, version, opts, false)
					res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet"})
					got := textOf(res)
					if err != nil {
						got = err.Error()
					}
					if strings.Contains(got, "answered elsewhere") {
						t.Fatalf("the call was served by the address the redirect named: %q", got)
					}
					if !strings.Contains(got, want) {
						t.Errorf("call: %q\nwant it to contain %q", got, want)
					}
					if strings.Contains(got, "s3cr3t") || strings.Contains(got, upstreamKey) {
						t.Errorf("the error shows a secret: %q", got)
					}
					lt, err := cs.ListTools(bounded(t), nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, tool := range lt.Tools {
						if tool.Name != "greet" {
							t.Errorf("the gateway serves %s, a tool of the address the redirect named", tool.Name)
						}
					}
				}
				if n, leaked := other.seen(); n != 0 || len(leaked) != 0 {
					t.Errorf("the address the redirect named got %d requests, with the upstream's credentials %q", n, leaked)
				}
			})
		}
	}
}
