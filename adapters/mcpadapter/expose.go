package mcpadapter

import (
	"context"
	"encoding/json"
	"path"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ident"
)

// Bulk exposure: an mcp_server's expose block serves the upstream's tools
// as mcpd's own, with the schemas of the upstream's tools/list:
//
//	expose {
//	  prefix       = "ev_"             // mcpd's name is prefix + the upstream's
//	  include      = ["get-*", "echo"] // glob patterns (path.Match); default all
//	  exclude      = ["*elicitation*"]
//	  scopes       = ["everything"]    // needed to list and call them
//	  rename       = { "get-sum" = "add" }         // mcpd's name, instead of prefix + name
//	  descriptions = { "echo" = "Repeat a text." } // the author's description
//	  when_down    = "keep"            // or "hide"
//	}
//
// Load never waits for the network: the upstream is connected once the
// config is served (adapter.Watcher), and until its first listing
// arrives the block contributes no tools. The listing's arrival, and every
// notifications/tools/list_changed after it, rebuilds mcpd's tool set
// through the reload path, which sends one list_changed to each client
// whose visible set changed. A tool the config declares by the same name
// (with its own mcp block, params, limits, confirm...) wins over the
// exposed one: that is the per-tool override.

var exposeSchema = &adapter.Schema{
	Attributes: []hcl.AttributeSchema{
		{Name: "prefix"},
		{Name: "include"},
		{Name: "exclude"},
		{Name: "scopes"},
		{Name: "rename"},
		{Name: "descriptions"},
		{Name: "when_down"},
		{Name: "resources"},
		{Name: "prompts"},
	},
}

// exposeConfig is a decoded expose block.
type exposeConfig struct {
	prefix           string
	include, exclude []string
	scopes           []string
	rename           map[string]string
	descriptions     map[string]string
	hideWhenDown     bool
	// resources and prompts: the upstream's resources (and templates) and
	// prompts are exposed too; prompts get the prefix, URIs are kept.
	resources, prompts bool
}

func decodeExpose(d *adapter.Decoder, b *hcl.Block) *exposeConfig {
	content, ok := d.Content(b.Body, exposeSchema)
	if !ok {
		return nil
	}
	e := &exposeConfig{}
	attrs := content.Attributes
	if a := attrs["prefix"]; a != nil {
		e.prefix, _ = d.String(a, "prefix")
	}
	for _, x := range []struct {
		name string
		dst  *[]string
	}{{"include", &e.include}, {"exclude", &e.exclude}, {"scopes", &e.scopes}} {
		a := attrs[x.name]
		if a == nil {
			continue
		}
		v, ok := d.Static(a, x.name, cty.List(cty.String))
		if !ok {
			continue
		}
		for _, el := range v.AsValueSlice() {
			if el.IsNull() {
				d.Errorf(a.Expr.Range(), "Invalid "+x.name, "%s must not contain null.", x.name)
				continue
			}
			s := el.AsString()
			if x.name != "scopes" {
				if _, err := path.Match(s, ""); err != nil {
					d.Errorf(a.Expr.Range(), "Invalid pattern", "%s: %q is not a glob pattern: %v.", x.name, s, err)
				}
			}
			*x.dst = append(*x.dst, s)
		}
	}
	if a := attrs["rename"]; a != nil {
		e.rename, _ = stringMap(d, a, "rename")
		for up, name := range e.rename {
			if !ident.ToolName(name) {
				d.Errorf(a.Expr.Range(), "Invalid tool name", "rename %q = %q: a tool name is 1 to 128 of A-Z, a-z, 0-9, _, . and -.", up, name)
			}
		}
	}
	if a := attrs["resources"]; a != nil {
		e.resources, _ = d.Bool(a, "resources")
	}
	if a := attrs["prompts"]; a != nil {
		e.prompts, _ = d.Bool(a, "prompts")
	}
	if a := attrs["descriptions"]; a != nil {
		e.descriptions, _ = stringMap(d, a, "descriptions")
	}
	if a := attrs["when_down"]; a != nil {
		if s, ok := d.String(a, "when_down"); ok {
			switch s {
			case "keep":
			case "hide":
				e.hideWhenDown = true
			default:
				d.Errorf(a.Expr.Range(), "Invalid when_down", `when_down is "keep" (the default: the last listed tools stay visible and their calls fail while the upstream is down) or "hide" (they disappear until it is back).`)
			}
		}
	}
	return e
}

// matches reports whether the block exposes the upstream tool name.
func (e *exposeConfig) matches(name string) bool {
	in := len(e.include) == 0
	for _, p := range e.include {
		if ok, _ := path.Match(p, name); ok {
			in = true
			break
		}
	}
	for _, p := range e.exclude {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	return in
}

// ContributedTools exposes the live upstream's listed tools
// (adapter.ToolContributor).
func (c *serverConfig) ContributedTools(b adapter.Backend) []adapter.ContributedTool {
	u, ok := b.(*upstream)
	if ok && c.user != nil {
		return u.disconnectTools() // userauth.go
	}
	if !ok || c.expose == nil {
		return nil
	}
	tools, down := u.catalog.current().tools, !u.conn.up()
	e := c.expose
	if down && e.hideWhenDown {
		return nil
	}
	var out []adapter.ContributedTool
	for _, t := range tools {
		if !e.matches(t.Name) {
			continue
		}
		name := e.prefix + t.Name
		if r, ok := e.rename[t.Name]; ok {
			name = r
		}
		desc := t.Description
		if d, ok := e.descriptions[t.Name]; ok {
			desc = d
		}
		out = append(out, adapter.ContributedTool{
			Name: name, Title: t.Title, Description: desc,
			InputSchema: jsonObject(t.InputSchema), OutputSchema: jsonObject(t.OutputSchema),
			Annotations: t.Annotations, Scopes: e.scopes,
			Handler:  &handler{tool: name, upTool: t.Name, up: u, forward: true, maxBytes: defaultMaxOutput},
			Declared: t,
		})
	}
	return out
}

// jsonObject is a schema as a JSON object (nil when absent or not one).
func jsonObject(v any) map[string]any {
	switch s := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// ContributedResources exposes the live upstream's resources and
// templates, with their URIs as they are (adapter.ResourceContributor).
func (c *serverConfig) ContributedResources(b adapter.Backend) ([]adapter.ContributedResource, []adapter.ContributedTemplate) {
	u, ok := b.(*upstream)
	if !ok || c.expose == nil || !c.expose.resources {
		return nil, nil
	}
	l, down := u.catalog.current(), !u.conn.up()
	resources, templates := l.resources, l.templates
	if down && c.expose.hideWhenDown {
		return nil, nil
	}
	var rs []adapter.ContributedResource
	for _, r := range resources {
		rs = append(rs, adapter.ContributedResource{Def: r, Scopes: c.expose.scopes, Read: u.readResource})
	}
	var ts []adapter.ContributedTemplate
	for _, t := range templates {
		ts = append(ts, adapter.ContributedTemplate{Def: t, Scopes: c.expose.scopes, Read: u.readResource})
	}
	return rs, ts
}

// ContributedPrompts exposes the live upstream's prompts, named with the
// prefix (adapter.PromptContributor).
func (c *serverConfig) ContributedPrompts(b adapter.Backend) []adapter.ContributedPrompt {
	u, ok := b.(*upstream)
	if !ok || c.expose == nil || !c.expose.prompts {
		return nil
	}
	prompts, down := u.catalog.current().prompts, !u.conn.up()
	if down && c.expose.hideWhenDown {
		return nil
	}
	var out []adapter.ContributedPrompt
	for _, p := range prompts {
		def := *p
		def.Name = c.expose.prefix + p.Name
		upName := p.Name
		out = append(out, adapter.ContributedPrompt{Def: &def, Scopes: c.expose.scopes, Declared: p,
			Get: func(ctx context.Context, req *adapter.PromptRequest) (*adapter.PromptOutput, error) {
				return u.getPrompt(ctx, upName, req)
			}})
	}
	return out
}

// readResource reads one resource of the upstream.
func (u *upstream) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	ctx = withHTTPAnswer(ctx) // for callError
	ctx, tok, err := u.authorize(ctx)
	if err != nil {
		return nil, err
	}
	cs, release, err := u.sessionFor(ctx, tok)
	if err != nil {
		return nil, err
	}
	defer release()
	u.relay.sharedBy(ctx, cs)
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, u.callError(ctx, cs, uri, err)
	}
	u.gate.admitRead(uri, res)
	return res, nil
}

// getPrompt gets one prompt of the upstream, relaying its questions to
// the client of req as a tool call's are (roundTrip).
func (u *upstream) getPrompt(ctx context.Context, name string, req *adapter.PromptRequest) (*adapter.PromptOutput, error) {
	x := &exchange{kind: "prompt", name: name, params: &mcp.GetPromptParams{Name: name, Arguments: req.Args},
		client: req.Client, rounds: req.Rounds}
	res, ask, err := u.roundTrip(ctx, x)
	switch {
	case err != nil:
		return nil, err
	case ask != nil:
		return &adapter.PromptOutput{InputRequired: ask}, nil
	}
	r := res.(*mcp.GetPromptResult)
	u.gate.admitPromptResult(name, r)
	return &adapter.PromptOutput{Result: r}, nil
}

var ctyString = cty.String
