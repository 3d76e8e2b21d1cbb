package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// e2eSecret has the characters encoders change: / (JSON \/), + and a
// capital letter (written \u0041 by some encoders).
const e2eSecret = "e2e/T0ken+Abc123"

// secretsConfig uses the secret in each adapter, the way the attacks of
// issue #8 brought it back: git printing a remote URL with its token on
// stderr, an API echoing the bearer token JSON-escaped, a query selecting it.
const secretsConfig = `
server {
  name    = "secrets-e2e"
  version = "1"
}

tool "git_push" {
  description = "Fails as git does, printing the remote URL with its token."
  shell {
    command = ["/bin/sh", "-c", "echo \"fatal: unable to access 'https://x-access-token:$TOKEN@example.com/r.git/'\" >&2; exit 1"]
    env     = { TOKEN = env("E2E_SECRET_TOKEN") }
  }
}

tool "echo" {
  description = "An API that echoes the bearer token, JSON-escaped."
  http {
    url     = "%[1]s/echo"
    headers = { Authorization = "Bearer ${env("E2E_SECRET_TOKEN")}" }
  }
}

tool "denied" {
  description = "An API that refuses, echoing the token in its error body."
  http {
    url     = "%[1]s/denied"
    headers = { Authorization = "Bearer ${env("E2E_SECRET_TOKEN")}" }
  }
}

tool "plain" {
  description = "An API that echoes the token in plain text, escaped."
  http {
    url     = "%[1]s/plain"
    headers = { Authorization = "Bearer ${env("E2E_SECRET_TOKEN")}" }
  }
}

database "db" {
  driver = "sqlite"
  dsn    = "e2e.db"
  seed   = "CREATE TABLE creds (name TEXT, value TEXT); INSERT INTO creds VALUES ('api', '${env("E2E_SECRET_TOKEN")}');"
}

tool "creds" {
  description = "Selects the stored credential."
  sql {
    database = "db"
    query    = "SELECT name, value FROM creds"
  }
}

resource "token_file" {
  uri = "secret://printed"
  shell {
    command = ["/bin/sh", "-c", "printf 'token=%%s' \"$TOKEN\""]
    env     = { TOKEN = env("E2E_SECRET_TOKEN") }
  }
}

prompt "deploy" {
  message {
    text = "Deploy with ${env("E2E_SECRET_TOKEN")}."
  }
}

tool "literal" {
  description = "Selects the secret as a literal."
  sql {
    database = "db"
    query    = "SELECT '${env("E2E_SECRET_TOKEN")}' AS token"
  }
}
`

// echoBackend answers with the bearer token it received, escaped as PHP
// writes JSON: / as \/ and, in one place, A as \u0041.
func echoBackend(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		slashed := strings.ReplaceAll(tok, "/", `\/`)
		unicode := strings.ReplaceAll(slashed, "A", `\u0041`)
		body := fmt.Sprintf(`{"token":"%s","keys":{"%s":1},"list":["x %s y"]}`, slashed, unicode, unicode)
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("Content-Type", "application/json")
		case "/denied":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
		case "/plain":
			w.Header().Set("Content-Type", "text/plain")
			body = "you sent " + unicode + " and " + slashed
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// No tool result of any adapter, resource read or prompt carries the env()
// secret, in any form, over a real stdio session with the real binary.
func TestSecretsNeverReachTheModel(t *testing.T) {
	srv := echoBackend(t)
	dir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(secretsConfig, srv.URL)})
	cmd := mcpdCommand("serve", "--stdio", "-c", dir)
	cmd.Env = append(cmd.Env, "E2E_SECRET_TOKEN="+e2eSecret)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()

	// The forms the secret must not take in what the client receives: raw,
	// and as the backend escaped it (the wire JSON escapes again).
	forms := []string{e2eSecret, "e2e\\/T0ken", `T0ken+\u0041bc`, "T0ken+Abc", "e2e/T0ken"}
	tests := []struct {
		tool    string
		isError bool
		want    string // a fragment of the text
	}{
		{"git_push", true, "fatal: unable to access 'https://x-access-token:[redacted]@example.com/r.git/'"},
		{"echo", false, `"token":"[redacted]"`},
		{"denied", true, `returned 401 Unauthorized, expected a 2xx status: {"token":"[redacted]"`},
		{"plain", false, "you sent [redacted] and [redacted]"},
		{"creds", false, "[redacted]"},
		{"literal", false, "[redacted]"},
	}
	rr, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "secret://printed"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "token=[redacted]" {
		t.Errorf("resource: %v %+v", err, rr)
	}
	pr, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "deploy"})
	if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Deploy with [redacted]." {
		t.Errorf("prompt: %v %+v", err, pr)
	}

	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			wire, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			text := textOf(res)
			if res.IsError != tc.isError || !strings.Contains(text, tc.want) {
				t.Errorf("isError=%v, text:\n%s\nwant isError=%v and %q", res.IsError, text, tc.isError, tc.want)
			}
			for _, f := range forms {
				if strings.Contains(string(wire), f) || strings.Contains(text, f) {
					t.Errorf("%q reached the client:\n%s", f, wire)
				}
			}
			if res.StructuredContent != nil {
				sc, _ := json.Marshal(res.StructuredContent)
				if !strings.Contains(string(sc), "[redacted]") {
					t.Errorf("structuredContent without the redaction mark: %s", sc)
				}
			}
		})
	}
}
