package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// auditLines collects the lines an audit.Logger writes.
type auditLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (a *auditLines) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.buf.Write(p)
}

func (a *auditLines) lines() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(a.buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// The audit hook reads the caller the auth layer verified (the SDK's
// TokenInfo, as the principal package encodes it) from the request itself,
// over HTTP in both eras, and records a cancelled call as cancelled.
func TestAuditPrincipalOverHTTP(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(testConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			f := newFake()
			defer f.releaseAll()
			l := loader.Load([]string{dir}, f.registry(), nil, "test")
			if l.Snapshot == nil {
				t.Fatalf("config does not load: %v", l.Diagnostics)
			}
			cur := &snapshot.Current{}
			cur.Swap(l.Snapshot)
			t.Cleanup(func() { cur.Load().Close() })
			out := &auditLines{}
			al := audit.New(out, audit.Options{Logger: quiet})
			srv := serve.New(cur, serve.Options{Logger: quiet, Audit: al, Generation: func() int { return 7 }})

			p := &principal.Principal{Name: "ci-bot", Method: "api_key", Scopes: []string{"read"}}
			verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
				if token != "key-1" {
					return nil, auth.ErrInvalidToken
				}
				ti := p.TokenInfo()
				ti.Expiration = time.Now().Add(time.Hour)
				return ti, nil
			}
			ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(srv.HTTPHandler(serve.HTTPOptions{})))
			t.Cleanup(ts.Close)
			tr := &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1, HTTPClient: &http.Client{Transport: authtest.Bearer("key-1", nil)}}
			cs := connect(t, tr, version, nil)

			if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "zeta_greet", Arguments: map[string]any{"name": "Ann"}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
				done <- err
			}()
			waitFor(t, f.started, "the slow call to start")
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call: %v", err)
			}
			waitFor(t, f.cancelled, "the server to cancel the call")
			wait.Until(t, "two audit lines", func() bool { return len(out.lines()) == 2 })
			if err := al.Close(bounded(t)); err != nil {
				t.Fatal(err)
			}

			lines := out.lines()
			for i, outcome := range []string{"ok", "cancelled"} {
				l := lines[i]
				if l["principal"] != "ci-bot" || l["auth_method"] != "api_key" || l["transport"] != "http" ||
					l["protocol_version"] != version || l["config_generation"] != 7.0 || l["outcome"] != outcome {
					t.Errorf("line %d: %v", i, l)
				}
				if sid, _ := l["session_id"].(string); (sid != "") != (version == legacy) {
					t.Errorf("line %d: session_id %q in %s", i, sid, version)
				}
			}
			if lines[0]["name"] != "zeta_greet" || lines[1]["name"] != "slow" {
				t.Errorf("names: %v %v", lines[0]["name"], lines[1]["name"])
			}
		})
	}
}
