package discovery_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/discovery"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/snapshot"
)

const described = `
server {
  name        = "com.example/tickets"
  title       = "Tickets"
  version     = "1.2.0"
  description = "Search and update support tickets."
  website_url = "https://example.com/tickets"
  icon {
    src       = "https://example.com/tickets.png"
    mime_type = "image/png"
    sizes     = ["48x48"]
  }
  icon {
    src = "data:image/png;base64,iVBORw0KGgo="
  }
}
tool "search" {
  description = "Search tickets"
  result {
    content "text" {
      text = "none"
    }
  }
}
toolset "triage" {
  description = "Triage: search only."
  tools       = ["search"]
  scopes      = ["triage"]
}
`

const withAuth = `
auth {
  header = "X-Api-Key"
  api_key "agent" {
    value = "agent-key-123456"
  }
}
`

func load(t *testing.T, files map[string]string) *snapshot.Snapshot {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := loader.LoadWith([]string{dir}, adapter.NewRegistry(), nil, "0.0.0-test", loader.Options{CheckOnly: true})
	if l.Snapshot == nil {
		t.Fatalf("load: %v", l.Diagnostics)
	}
	t.Cleanup(func() { l.Snapshot.Close() })
	return l.Snapshot
}

// validator compiles one of the published schemas kept in testdata.
func validator(t *testing.T, file string) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// conform checks v against a schema the way a client would see it: as
// JSON.
func conform(t *testing.T, rs *jsonschema.Resolved, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if err := rs.Validate(doc); err != nil {
		t.Errorf("%s does not conform: %v", b, err)
	}
	return doc
}

// Every card mcpd builds conforms to the published Server Card schema:
// with and without auth, a toolset's, and a server with no identity at
// all (the schema requires name, version and description).
func TestCardConforms(t *testing.T) {
	rs := validator(t, "server-card.schema.json")
	// The validator refuses what the schema refuses: a card without a
	// registry-style name.
	if err := rs.Validate(map[string]any{"$schema": discovery.CardSchema, "name": "tickets", "version": "1", "description": "d"}); err == nil {
		t.Fatal("the schema accepts a name without a namespace")
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		toolset string
		check   func(t *testing.T, doc map[string]any)
	}{
		{"described", map[string]string{"a.hcl": described}, "", func(t *testing.T, doc map[string]any) {
			if doc["name"] != "com.example/tickets" || doc["version"] != "1.2.0" || doc["websiteUrl"] != "https://example.com/tickets" {
				t.Errorf("identity: %v", doc)
			}
			if icons := doc["icons"].([]any); len(icons) != 2 {
				t.Errorf("icons: %v", icons)
			}
			if doc["_meta"] != nil {
				t.Errorf("_meta without auth or toolset: %v", doc["_meta"])
			}
		}},
		{"toolset with auth", map[string]string{"a.hcl": described, "auth.hcl": withAuth}, "triage", func(t *testing.T, doc map[string]any) {
			if doc["name"] != "com.example/tickets-triage" || doc["description"] != "Triage: search only." {
				t.Errorf("toolset identity: %v", doc)
			}
			remote := doc["remotes"].([]any)[0].(map[string]any)
			if remote["url"] != "https://mcp.example.com/mcp/triage" {
				t.Errorf("url %v", remote["url"])
			}
			h := remote["headers"].([]any)[0].(map[string]any)
			if h["name"] != "Authorization" || h["isRequired"] != true || h["isSecret"] != true || !strings.Contains(h["description"].(string), "X-Api-Key") {
				t.Errorf("auth header: %v", h)
			}
			meta := doc["_meta"].(map[string]any)
			am := meta[discovery.MetaAuth].(map[string]any)
			if meta[discovery.MetaToolset] != "triage" || am["apiKeyHeader"] != "X-Api-Key" || len(am["scopes"].([]any)) != 1 {
				t.Errorf("_meta: %v", meta)
			}
			if b, _ := json.Marshal(doc); strings.Contains(string(b), "agent-key-123456") {
				t.Errorf("the card carries an API key: %s", b)
			}
		}},
		{"oauth", map[string]string{"a.hcl": described, "auth.hcl": `
auth {
  resource = "https://mcp.example.com/mcp"
  scopes   = ["tickets"]
  oauth {
    issuer   = "https://login.example.com"
    jwks_url = "https://login.example.com/jwks.json"
  }
}
`}, "", func(t *testing.T, doc map[string]any) {
			am := doc["_meta"].(map[string]any)[discovery.MetaAuth].(map[string]any)
			if am["protectedResourceMetadata"] != "https://mcp.example.com/.well-known/oauth-protected-resource/mcp" ||
				am["authorizationServers"].([]any)[0] != "https://login.example.com" || am["methods"].([]any)[0] != "oauth2" ||
				am["scopes"].([]any)[0] != "tickets" || am["resource"] != "https://mcp.example.com/mcp" {
				t.Errorf("oauth _meta: %v", am)
			}
			h := doc["remotes"].([]any)[0].(map[string]any)["headers"].([]any)[0].(map[string]any)
			if !strings.Contains(h["description"].(string), "https://login.example.com") {
				t.Errorf("oauth header: %v", h)
			}
		}},
		{"no server block", map[string]string{"a.hcl": `tool "t" {
  description = "t"
  result {
    content "text" {
      text = "x"
    }
  }
}`}, "", func(t *testing.T, doc map[string]any) {
			if doc["name"] != "com.example.mcp/mcpd" || doc["description"] != "MCP server mcpd" || doc["version"] != "0.0.0-test" {
				t.Errorf("defaults: %v", doc)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := load(t, tc.files)
			url := "https://mcp.example.com/mcp"
			if tc.toolset != "" {
				url += "/" + tc.toolset
			}
			card, ok := discovery.CardFor(snap, tc.toolset, url)
			if !ok {
				t.Fatal("no card")
			}
			tc.check(t, conform(t, rs, card))
		})
	}
	if _, ok := discovery.CardFor(load(t, map[string]string{"a.hcl": described}), "nope", "https://x/mcp/nope"); ok {
		t.Error("a card for an undeclared toolset")
	}
}

// server.json conforms to the registry's schema; what the registry does
// not take (a data: icon) is left out with a note; a name that is not a
// registry name is refused with one to use.
func TestServerJSON(t *testing.T) {
	rs := validator(t, "server.schema.json")
	snap := load(t, map[string]string{"a.hcl": described, "auth.hcl": withAuth})
	sj, notes, err := discovery.ServerJSONFor(snap, discovery.ServerJSONOptions{
		URLs: []string{"https://mcp.example.com/mcp"}, Repository: "https://github.com/example/tickets",
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := conform(t, rs, sj)
	if doc["$schema"] != discovery.ServerJSONSchema || doc["name"] != "com.example/tickets" || len(doc["icons"].([]any)) != 1 {
		t.Errorf("server.json: %v", doc)
	}
	if repo := doc["repository"].(map[string]any); repo["source"] != "github" {
		t.Errorf("repository: %v", repo)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "data: URI") {
		t.Errorf("notes: %q", notes)
	}
	remote := doc["remotes"].([]any)[0].(map[string]any)
	if remote["headers"] == nil || remote["supportedProtocolVersions"] != nil {
		t.Errorf("remote: %v", remote)
	}

	plain := load(t, map[string]string{"a.hcl": `server {
  name = "tickets"
}`})
	_, _, err = discovery.ServerJSONFor(plain, discovery.ServerJSONOptions{URLs: []string{"https://mcp.example.com/mcp"}})
	if err == nil || !strings.Contains(err.Error(), `"com.example.mcp/tickets"`) || !strings.Contains(err.Error(), "--name") {
		t.Errorf("a plain name: %v", err)
	}
	sj, _, err = discovery.ServerJSONFor(plain, discovery.ServerJSONOptions{Name: "io.github.acme/tickets", URLs: []string{"https://mcp.example.com/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	if doc := conform(t, rs, sj); doc["name"] != "io.github.acme/tickets" || doc["description"] != "MCP server tickets" {
		t.Errorf("--name: %v", doc)
	}
	if _, _, err := discovery.ServerJSONFor(plain, discovery.ServerJSONOptions{Name: "io.github.acme/tickets"}); err == nil || !strings.Contains(err.Error(), "--url") {
		t.Errorf("no URL: %v", err)
	}
}

func TestCardName(t *testing.T) {
	for _, tc := range []struct{ name, host, want string }{
		{"com.example/tickets", "anything", "com.example/tickets"},
		{"tickets", "mcp.example.com", "com.example.mcp/tickets"},
		{"tickets", "127.0.0.1", "127.0.0.1/tickets"},
		{"tickets", "::1", "localhost/tickets"},
		{"tickets", "2001:db8::7", "2001-db8--7/tickets"},
		{"tickets", "", "localhost/tickets"},
		{"My Tickets!", "localhost", "localhost/My-Tickets"},
		{"", "localhost", "localhost/mcpd"},
	} {
		if got := discovery.CardName(tc.name, tc.host); got != tc.want {
			t.Errorf("CardName(%q, %q) = %q, want %q", tc.name, tc.host, got, tc.want)
		}
	}
}
