package snapshot

import (
	"errors"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/redact"
)

// Secrets are the values env(), file() and filebase64() read in the blocks
// that talk to backends: adapter blocks (in tools, resources and resource
// templates) and backend blocks. Every result, resource content and prompt
// message leaves the snapshot through the snapshot's one Redactor, which
// replaces them wherever an adapter's output, an error or a shaped result
// carries them. Values the config itself shows the model (descriptions,
// prompt and resource text, result contents) are not secrets: redacting
// text = file("prompt.md") would blank the prompt.

// recordSecrets evaluates every env(), file() and filebase64() call of the
// config's adapter and backend blocks, including those an adapter only runs
// on a call, and returns the values they read.
func recordSecrets(cfg *config.Config) *redact.Set {
	set := &redact.Set{}
	tables := map[string]map[string]function.Function{}
	eval := func(dir string, body hcl.Body) {
		t, ok := tables[dir]
		if !ok {
			t = funcs.TableWith(dir, funcs.Options{Secrets: set, UnsetEnvUnknown: cfg.UnsetEnvUnknown})
			tables[dir] = t
		}
		funcs.EvalSecretCalls(body, &hcl.EvalContext{Functions: t})
	}
	for _, b := range cfg.Backends {
		eval(b.Dir, b.Body)
	}
	for _, t := range cfg.Tools {
		if t.Adapter != nil {
			eval(t.Dir, t.Adapter.Body)
		}
	}
	for _, r := range cfg.Resources {
		if r.Adapter != nil {
			eval(r.Dir, r.Adapter.Body)
		}
	}
	for _, r := range cfg.ResourceTemplates {
		if r.Adapter != nil {
			eval(r.Dir, r.Adapter.Body)
		}
	}
	return set
}

// redactResult redacts a tool result in place: its text contents (text,
// embedded text resources, resource links), its structured content and
// thereby its error text. Binary contents (images, audio, blobs) are left
// alone. Contents may be shared with other calls (static ones are built at
// load), so a changed one is replaced, never modified.
func redactResult(r *redact.Redactor, res *mcp.CallToolResult) *mcp.CallToolResult {
	if r == nil || res == nil {
		return res
	}
	for i, c := range res.Content {
		res.Content[i] = redactContent(r, c)
	}
	if res.StructuredContent != nil {
		res.StructuredContent = r.Value(res.StructuredContent)
	}
	return res
}

func redactContent(r *redact.Redactor, c mcp.Content) mcp.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		if t := r.String(c.Text); t != c.Text {
			cp := *c
			cp.Text = t
			return &cp
		}
	case *mcp.EmbeddedResource:
		if rc := redactResourceContents(r, c.Resource); rc != c.Resource {
			cp := *c
			cp.Resource = rc
			return &cp
		}
	case *mcp.ResourceLink:
		uri, name, title, desc := r.String(c.URI), r.String(c.Name), r.String(c.Title), r.String(c.Description)
		if uri != c.URI || name != c.Name || title != c.Title || desc != c.Description {
			cp := *c
			cp.URI, cp.Name, cp.Title, cp.Description = uri, name, title, desc
			return &cp
		}
	}
	return c
}

// redactResourceContents redacts a text resource; a blob is left alone.
func redactResourceContents(r *redact.Redactor, rc *mcp.ResourceContents) *mcp.ResourceContents {
	if rc == nil {
		return nil
	}
	if t := r.String(rc.Text); t != rc.Text {
		cp := *rc
		cp.Text = t
		return &cp
	}
	return rc
}

// redactError returns err, or an error with its text redacted when the
// text holds a secret.
func redactError(r *redact.Redactor, err error) error {
	if r == nil || err == nil {
		return err
	}
	if msg := r.String(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}
