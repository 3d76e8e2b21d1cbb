package snapshot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/snapshot"
)

const secretsConfig = `
fake_backend "b" {
  setting = env("SNAP_BACKEND_SECRET")
}

tool "say" {
  description = "Says the secret; evaluated on each call only (it uses args)."
  param "x" {
    type     = "string"
    required = false
  }
  fake {
    mode = "say"
    say  = "${env("SNAP_SECRET")}${args.x == null ? "" : args.x}"
  }
}

tool "say_escaped" {
  description = "Says the secret JSON-escaped, as PHP would."
  fake {
    mode = "say"
    say  = "{\"t\":\"${replace(env("SNAP_SECRET"), "/", "\\/")}\"}"
  }
}

tool "say_error" {
  description = "Fails with the secret in the error."
  fake {
    mode = "say_error"
    say  = "token ${env("SNAP_SECRET")}"
  }
}

tool "say_media" {
  description = "Returns the secret as image bytes."
  fake {
    mode = "say_media"
    say  = env("SNAP_SECRET")
  }
}

tool "say_progress" {
  description = "Reports the secret as a progress message."
  fake {
    mode = "say_progress"
    say  = "at ${env("SNAP_SECRET")}"
  }
}

tool "declarative" {
  description = "Shows a secret and the prompt file: only the secret goes."
  result {
    content "text" {
      text = "${env("SNAP_SECRET")} ${env("SNAP_BACKEND_SECRET")}"
    }
    content "text" {
      text = file("prompt.md")
    }
  }
}

resource "said" {
  uri = "secret://said"
  fake {
    mode = "say"
    say  = env("SNAP_SECRET")
  }
}

resource "doc" {
  uri  = "docs://prompt"
  text = file("prompt.md")
}

# The same file read for a backend (as a database's seed is) and published
# as a resource: the resource is the config's own content and stays whole.
fake_backend "seeded" {
  setting = file("seed.sql")
}

resource "seed" {
  uri       = "docs://seed"
  file      = "seed.sql"
  mime_type = "text/plain"
}

prompt "p" {
  message {
    text = "Use ${env("SNAP_SECRET")}."
  }
  message {
    text = file("prompt.md")
  }
}
`

// Secrets read for adapter and backend blocks leave no tool result,
// resource or prompt, whichever adapter output, error or shaped result
// carries them; text the config shows on purpose (file("prompt.md")) stays.
func TestRedactSecrets(t *testing.T) {
	const secret = "sn4p/s3cret+value"
	const prompt = "Review the code carefully and say what is wrong with it."
	const seed = "CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT);"
	t.Setenv("SNAP_SECRET", secret)
	t.Setenv("SNAP_BACKEND_SECRET", "backend-only-secret")
	f := newFake()
	s, _ := build(t, f.register(), nil, map[string]string{"t.hcl": secretsConfig, "prompt.md": prompt, "seed.sql": seed})
	ctx := context.Background()

	leaks := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		// JSON may escape the secret's characters; compare decoded text.
		var generic any
		_ = json.Unmarshal(b, &generic)
		g, _ := json.Marshal(generic)
		return strings.Contains(string(b), "sn4p") || strings.Contains(string(g), "sn4p") || strings.Contains(string(b), "backend-only-secret")
	}

	tests := []struct {
		tool, args, want string
	}{
		{"say", `{}`, `text:[redacted] structured:{"[redacted]":"as a key","said":"[redacted]"}`},
		{"say", `{"x":"-more"}`, `text:[redacted]-more structured:{"[redacted]-more":"as a key","said":"[redacted]-more"}`},
		{"say_escaped", `{}`, `text:{"t":"[redacted]"} structured:{"said":"{\"t\":\"[redacted]\"}","{\"t\":\"[redacted]\"}":"as a key"}`},
		{"say_error", `{}`, "ERROR text:tool say_error: backend said token [redacted]"},
		{"declarative", `{}`, "text:[redacted] [redacted] text:" + prompt},
	}
	for _, tc := range tests {
		t.Run(tc.tool+tc.args, func(t *testing.T) {
			res := call(tool(t, s, tc.tool), ctx, json.RawMessage(tc.args), nil)
			if got := strings.Join(strings.Split(render(res), "\n"), " "); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if leaks(res) {
				t.Errorf("the secret leaked: %+v", res)
			}
		})
	}

	// Binary contents are left alone: an image is not text a model reads.
	res := call(tool(t, s, "say_media"), ctx, json.RawMessage(`{}`), nil)
	if img, ok := res.Content[0].(*mcp.ImageContent); !ok || string(img.Data) != secret {
		t.Errorf("media changed: %+v", res.Content[0])
	}

	var messages []string
	call(tool(t, s, "say_progress"), ctx, json.RawMessage(`{}`), func(_, _ float64, msg string) { messages = append(messages, msg) })
	if len(messages) != 1 || messages[0] != "at [redacted]" {
		t.Errorf("progress messages = %q", messages)
	}

	rr, found, err := s.ReadResource(ctx, &snapshot.ReadRequest{URI: "secret://said"})
	if !found || err != nil || rr.Contents[0].Text != redact.Mark {
		t.Errorf("resource: %v %v %+v", found, err, rr)
	}
	rr, _, err = s.ReadResource(ctx, &snapshot.ReadRequest{URI: "docs://prompt"})
	if err != nil || rr.Contents[0].Text != prompt {
		t.Errorf("text resource from file(): %v %+v", err, rr)
	}
	rr, _, err = s.ReadResource(ctx, &snapshot.ReadRequest{URI: "docs://seed"})
	if err != nil || rr.Contents[0].Text != seed {
		t.Errorf("a file resource the config declares is published whole, though a backend reads it too: %v %+v", err, rr)
	}

	p, _ := s.Prompt("p")
	pr, err := p.Get(ctx, &snapshot.GetRequest{Args: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*mcp.TextContent).Text; got != "Use [redacted]." {
		t.Errorf("prompt message = %q", got)
	}
	if got := pr.Messages[1].Content.(*mcp.TextContent).Text; got != prompt {
		t.Errorf("prompt from file() = %q", got)
	}
}
