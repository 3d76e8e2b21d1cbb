package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/internal/wait"
)

const cardConfig = `
server {
  name        = "tickets"
  title       = "Tickets"
  version     = "VERSION"
  description = "Search and update support tickets."
  icon {
    src       = "https://example.com/tickets.png"
    mime_type = "image/png"
    sizes     = ["48x48"]
  }
}

tool "search" {
  description = "Search tickets"
  icon {
    src   = "https://example.com/search.svg"
    sizes = ["any"]
    theme = "dark"
  }
  result {
    content "text" {
      text = "none found"
    }
  }
}

prompt "triage" {
  description = "Triage a ticket"
  icon {
    src = "data:image/png;base64,iVBORw0KGgo="
  }
  message {
    text = "Triage it."
  }
}

toolset "support" {
  description = "Search only, for support agents."
  tools       = ["search"]
  scopes      = ["support"]
}

auth {
  header = "X-Api-Key"
  api_key "agent" {
    value  = env("CARD_AGENT_KEY")
    scopes = ["support"]
  }
}
`

// card is what a client reads of a Server Card.
type card struct {
	Schema      string `json:"$schema"`
	Name        string
	Version     string
	Description string
	Title       string
	Icons       []mcp.Icon
	Remotes     []struct {
		Type, URL                 string
		SupportedProtocolVersions []string
		Headers                   []struct {
			Name                 string
			IsRequired, IsSecret bool
		}
	}
	Meta map[string]any `json:"_meta"`
}

// fetchCard reads a Server Card as a discovering client does, with the
// extension's media type in Accept; it returns the status, the response
// and, on 200, the card.
func fetchCard(t *testing.T, url string, header map[string]string) (*http.Response, *card) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/mcp-server-card+json")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		return resp, nil
	}
	var c card
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("%s: %v\n%s", url, err, body)
	}
	return resp, &c
}

// A running `mcpd serve` serves each endpoint's Server Card: public (no
// API key needed, though the endpoints need one), describing the server
// block, the endpoint's URL, its protocol versions and the Authorization
// header; the toolset's card names the toolset's endpoint; the Host and
// Origin guard of /mcp applies; an edit of the config file shows in the
// card once reloaded. The icons the config declares reach a real client
// in initialize, tools/list and prompts/list, in both protocol eras.
func TestServerCard(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": strings.Replace(cardConfig, "VERSION", "1.2.0", 1)})
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir)
	cmd.Env = append(cmd.Env, "CARD_AGENT_KEY=agent-key-123456")
	endpoint := startHTTP(t, cmd)

	resp, c := fetchCard(t, endpoint+"/server-card", nil)
	if c == nil {
		t.Fatalf("/mcp/server-card: %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/mcp-server-card+json" {
		t.Errorf("Content-Type %q", ct)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("ETag") == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age") {
		t.Errorf("headers: %v", resp.Header)
	}
	if c.Schema != "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json" || c.Name != "127.0.0.1/tickets" ||
		c.Version != "1.2.0" || c.Title != "Tickets" || c.Description != "Search and update support tickets." {
		t.Errorf("identity: %+v", c)
	}
	if len(c.Icons) != 1 || c.Icons[0].Source != "https://example.com/tickets.png" || c.Icons[0].MIMEType != "image/png" {
		t.Errorf("icons: %+v", c.Icons)
	}
	if len(c.Remotes) != 1 || c.Remotes[0].Type != "streamable-http" || c.Remotes[0].URL != endpoint ||
		!slices.Contains(c.Remotes[0].SupportedProtocolVersions, "2025-11-25") || !slices.Contains(c.Remotes[0].SupportedProtocolVersions, "2026-07-28") {
		t.Fatalf("remotes: %+v", c.Remotes)
	}
	if h := c.Remotes[0].Headers; len(h) != 1 || h[0].Name != "Authorization" || !h[0].IsRequired || !h[0].IsSecret {
		t.Errorf("auth header: %+v", h)
	}
	if am, _ := c.Meta["mcpd/auth"].(map[string]any); am == nil || am["apiKeyHeader"] != "X-Api-Key" {
		t.Errorf("_meta: %v", c.Meta)
	}

	// A client that has the card revalidates it for nothing.
	req, _ := http.NewRequest("GET", endpoint+"/server-card", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %v %v", r, err)
	} else {
		r.Body.Close()
	}

	// The toolset's card: its own name, description and URL.
	_, tc := fetchCard(t, endpoint+"/support/server-card", nil)
	if tc == nil || tc.Name != "127.0.0.1/tickets-support" || tc.Description != "Search only, for support agents." ||
		tc.Remotes[0].URL != endpoint+"/support" || tc.Meta["mcpd/toolset"] != "support" {
		t.Errorf("toolset card: %+v", tc)
	}

	for _, bad := range []struct {
		what, path string
		header     map[string]string
		want       int
	}{
		{"undeclared toolset", "/nope/server-card", nil, 404},
		{"foreign Origin", "/server-card", map[string]string{"Origin": "https://evil.example"}, 403},
		{"foreign Host", "/server-card", map[string]string{"Host": "evil.example"}, 403},
		{"local Origin", "/server-card", map[string]string{"Origin": "http://localhost:5173"}, 200},
	} {
		if resp, _ := fetchCard(t, endpoint+bad.path, bad.header); resp.StatusCode != bad.want {
			t.Errorf("%s: %d, want %d", bad.what, resp.StatusCode, bad.want)
		}
	}
	if resp, err := http.Post(endpoint+"/server-card", "application/json", strings.NewReader("{}")); err != nil || resp.StatusCode != 405 {
		t.Errorf("POST: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// Icons on the wire, both eras, through the fast paths.
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "card-e2e", Version: "1"}, nil)
		cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: keyTransport{"X-Api-Key", "agent-key-123456", http.DefaultTransport}}},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%s: %v", version, err)
		}
		if version == "2025-11-25" {
			si := cs.InitializeResult().ServerInfo
			if si == nil || len(si.Icons) != 1 || si.Description != "Search and update support tickets." {
				t.Errorf("%s serverInfo: %+v", version, si)
			}
		}
		tools, err := cs.ListTools(bounded(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools.Tools) != 1 || len(tools.Tools[0].Icons) != 1 || tools.Tools[0].Icons[0].Theme != "dark" || tools.Tools[0].Icons[0].Sizes[0] != "any" {
			t.Errorf("%s tools/list icons: %+v", version, tools.Tools)
		}
		prompts, err := cs.ListPrompts(bounded(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(prompts.Prompts) != 1 || len(prompts.Prompts[0].Icons) != 1 || !strings.HasPrefix(prompts.Prompts[0].Icons[0].Source, "data:image/png;base64,") {
			t.Errorf("%s prompts/list icons: %+v", version, prompts.Prompts)
		}
		cs.Close()
	}

	// A reload of the file changes the card.
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(strings.Replace(cardConfig, "VERSION", "1.3.0", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the card says version 1.3.0 after the reload", func() bool {
		_, c := fetchCard(t, endpoint+"/server-card", nil)
		return c != nil && c.Version == "1.3.0"
	})
}

// `mcpd server-json` prints the registry's server.json of a config whose
// secrets are not set, with the remotes given; without a registry name it
// says which to give.
func TestServerJSONCommand(t *testing.T) {
	clearEnv(t)
	t.Setenv("CARD_AGENT_KEY", "")
	os.Unsetenv("CARD_AGENT_KEY")
	dir := configDir(t, map[string]string{"tools.hcl": strings.Replace(cardConfig, "VERSION", "1.2.0", 1)})
	r := runCLI(t, "server-json", "-c", dir, "--url", "https://mcp.example.com/mcp")
	if r.code != 1 || !strings.Contains(r.stderr, `"com.example.mcp/tickets"`) || !strings.Contains(r.stderr, "--name") {
		t.Errorf("without a registry name: %+v", r)
	}
	r = runCLI(t, "server-json", "-c", dir, "--url", "https://mcp.example.com/mcp", "--url", "https://mcp.example.com/mcp/support", "--name", "com.example/tickets")
	if r.code != 0 {
		t.Fatalf("server-json: %+v", r)
	}
	var sj struct {
		Schema      string `json:"$schema"`
		Name        string
		Version     string
		Description string
		Icons       []mcp.Icon
		Remotes     []struct {
			Type, URL string
			Headers   []struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &sj); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if sj.Schema != "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json" || sj.Name != "com.example/tickets" ||
		sj.Version != "1.2.0" || sj.Description == "" || len(sj.Icons) != 1 || len(sj.Remotes) != 2 ||
		sj.Remotes[1].URL != "https://mcp.example.com/mcp/support" || len(sj.Remotes[0].Headers) != 1 {
		t.Errorf("server.json: %+v", sj)
	}
	if r := runCLI(t, "server-json", "-c", dir, "--name", "com.example/tickets"); r.code != 1 || !strings.Contains(r.stderr, "--url") {
		t.Errorf("without --url: %+v", r)
	}
}
