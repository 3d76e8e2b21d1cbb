package mcpadapter

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/ident"
)

// What an upstream lists is passed on to mcpd's clients, whose hosts show
// it: every identifier of every entry (names, titles, URIs, URI
// templates, MIME types, prompt arguments, icons) must pass engine/ident's
// rule, and a tool's or prompt's name the spec's (validName). An entry
// with one that does not is dropped, logged and counted
// (mcpd_upstream_dropped_total, reason "identifier"); the upstream's other entries
// keep serving. Descriptions are cleaned (ident.Clean), not refused.

// maxDropLogs is how many dropped entries one listing logs one by one;
// the rest are summed up in one record. A listing that drops what the
// previous one dropped logs nothing again (it is still counted).
const maxDropLogs = 8

// admitter checks what an upstream sends against what mcpd serves
// (identifiers here, schemas and depth in drop.go), and counts what it
// leaves out, by reason.
type admitter struct {
	name string // the upstream's, for errors
	log  *slog.Logger

	drops dropCounts // definitions left out of its listings, by reason (drop.go)

	mu sync.Mutex
	// listingDrops is why the latest check of each kind dropped entries,
	// so that the same reasons are not logged at every listing (they are
	// counted in drops).
	listingDrops map[string][]string
}

// admission is the check of one listing of one kind, or of one answer.
type admission struct {
	g    *admitter
	kind string // what is checked, for the log: "tool", "resource"...
	// memo is the key under which the reasons are remembered, one of a
	// few fixed ones (kind may name a URI a client chose): a listing's
	// kind, or "result", "read", "completion".
	memo    string
	reasons []string // why each dropped entry was, in order
}

// field checks one identifier of the entry id; required: it may not be
// empty. It records why it fails and reports whether it passed.
func (a *admission) field(id, name, value string, required bool) bool {
	var err error
	switch {
	case value == "" && required:
		err = fmt.Errorf("is empty")
	case value != "":
		err = ident.Check(value)
	}
	if err != nil {
		a.reasons = append(a.reasons, fmt.Sprintf("%s %s: %s %s", a.kind, quoted(id), name, err))
		return false
	}
	return true
}

// name checks a tool's or prompt's name: the spec's rule for tool names,
// which mcpd applies to prompts too (they are prefixed and named alike).
func (a *admission) name(value string) bool {
	if ident.ToolName(value) {
		return true
	}
	a.reasons = append(a.reasons, fmt.Sprintf("%s %s: name is not 1 to 128 of A-Z, a-z, 0-9, _, . and -", a.kind, quoted(value)))
	return false
}

// icons checks the icons' addresses (a client fetches them, and shows
// them when it cannot: no bound on length, data: URIs are long).
func (a *admission) icons(id string, icons []mcp.Icon) bool {
	for _, ic := range icons {
		if err := ident.CheckLen(ic.Source, 0); err != nil {
			a.reasons = append(a.reasons, fmt.Sprintf("%s %s: icon src %s", a.kind, quoted(id), err))
			return false
		}
		if !a.field(id, "icon mimeType", ic.MIMEType, false) {
			return false
		}
	}
	return true
}

// done counts and logs what the check dropped.
func (a *admission) done() {
	listing := a.memo == a.kind
	if len(a.reasons) == 0 {
		if listing { // an answer's check takes no lock when all is well
			a.g.setDropped(a.memo, nil)
		}
		return
	}
	a.g.drops.addN("identifier", int64(len(a.reasons)))
	if !a.g.setDropped(a.memo, a.reasons) {
		return
	}
	msg := "upstream listing entry dropped"
	if !listing {
		msg = "part of an upstream answer dropped"
	}
	for i, r := range a.reasons {
		if i == maxDropLogs {
			a.g.log.Warn(msg, "kind", a.kind, "more", len(a.reasons)-maxDropLogs)
			break
		}
		a.g.log.Warn(msg, "reason", r)
	}
}

// setDropped remembers why the latest check under memo dropped entries
// and reports whether that differs from the check before.
func (g *admitter) setDropped(memo string, reasons []string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.listingDrops == nil {
		g.listingDrops = map[string][]string{}
	}
	changed := !slices.Equal(g.listingDrops[memo], reasons)
	g.listingDrops[memo] = reasons
	return changed
}

// quoted is an identifier as a log record or error shows it: quoted with
// its control characters escaped, and at most 80 bytes of it.
func quoted(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.QuoteToASCII(s)
}

// admitTools keeps the tools whose identifiers pass, descriptions cleaned.
func (g *admitter) admitTools(tools []*mcp.Tool) []*mcp.Tool {
	a := &admission{g: g, kind: "tool", memo: "tool"}
	out := tools[:0]
	for _, t := range tools {
		ok := a.name(t.Name) && a.field(t.Name, "title", t.Title, false) && a.icons(t.Name, t.Icons)
		if ok && t.Annotations != nil {
			ok = a.field(t.Name, "annotations.title", t.Annotations.Title, false)
		}
		if !ok {
			continue
		}
		t.Description = ident.Clean(t.Description)
		out = append(out, t)
	}
	a.done()
	return out
}

// admitResources keeps the resources whose identifiers pass.
func (g *admitter) admitResources(rs []*mcp.Resource) []*mcp.Resource {
	a := &admission{g: g, kind: "resource", memo: "resource"}
	out := rs[:0]
	for _, r := range rs {
		if !(a.field(r.URI, "uri", r.URI, true) && a.field(r.URI, "name", r.Name, true) &&
			a.field(r.URI, "title", r.Title, false) && a.field(r.URI, "mimeType", r.MIMEType, false) &&
			a.icons(r.URI, r.Icons) && a.annotations(r.URI, r.Annotations)) {
			continue
		}
		r.Description = ident.Clean(r.Description)
		out = append(out, r)
	}
	a.done()
	return out
}

// admitTemplates keeps the resource templates whose identifiers pass.
func (g *admitter) admitTemplates(ts []*mcp.ResourceTemplate) []*mcp.ResourceTemplate {
	a := &admission{g: g, kind: "resource template", memo: "resource template"}
	out := ts[:0]
	for _, t := range ts {
		id := t.URITemplate
		if !(a.field(id, "uriTemplate", t.URITemplate, true) && a.field(id, "name", t.Name, true) &&
			a.field(id, "title", t.Title, false) && a.field(id, "mimeType", t.MIMEType, false) &&
			a.icons(id, t.Icons) && a.annotations(id, t.Annotations)) {
			continue
		}
		t.Description = ident.Clean(t.Description)
		out = append(out, t)
	}
	a.done()
	return out
}

// admitPrompts keeps the prompts whose identifiers, arguments' included,
// pass.
func (g *admitter) admitPrompts(ps []*mcp.Prompt) []*mcp.Prompt {
	a := &admission{g: g, kind: "prompt", memo: "prompt"}
	out := ps[:0]
next:
	for _, p := range ps {
		if !(a.name(p.Name) && a.field(p.Name, "title", p.Title, false) && a.icons(p.Name, p.Icons)) {
			continue
		}
		for _, arg := range p.Arguments {
			if arg == nil || !a.field(p.Name, "argument name", arg.Name, true) || !a.field(p.Name, "argument title", arg.Title, false) {
				if arg == nil {
					a.reasons = append(a.reasons, fmt.Sprintf("prompt %s: an argument is null", quoted(p.Name)))
				}
				continue next
			}
		}
		p.Description = ident.Clean(p.Description)
		for _, arg := range p.Arguments {
			arg.Description = ident.Clean(arg.Description)
		}
		out = append(out, p)
	}
	a.done()
	return out
}

// annotations checks a resource's annotations (lastModified is shown).
func (a *admission) annotations(id string, an *mcp.Annotations) bool {
	return an == nil || a.field(id, "annotations.lastModified", an.LastModified, false)
}

// The same rule holds for what an upstream's answers carry that a client
// shows as a name or address: the resource links and embedded resources
// of a tool's result or a prompt's messages, the contents of a resource
// read, and completion values. A block, content or value that fails is
// dropped (the rest of the answer is passed on), logged and counted.

// admitContent keeps the content blocks whose identifiers pass; what is
// the answer they are part of, for the log.
func (g *admitter) admitContent(what string, content []mcp.Content) []mcp.Content {
	a := &admission{g: g, kind: "content of " + what, memo: "result"}
	var out []mcp.Content
	for i, c := range content {
		if !a.block(c) {
			if out == nil {
				out = append([]mcp.Content(nil), content[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, c)
		}
	}
	a.done()
	if out == nil {
		return content // the usual case: nothing dropped, no copy
	}
	return out
}

// block checks one content block.
func (a *admission) block(c mcp.Content) bool {
	switch b := c.(type) {
	case *mcp.ResourceLink:
		if !(a.field(b.URI, "resource link uri", b.URI, true) && a.field(b.URI, "resource link name", b.Name, true) &&
			a.field(b.URI, "resource link title", b.Title, false) && a.field(b.URI, "resource link mimeType", b.MIMEType, false) &&
			a.icons(b.URI, b.Icons)) {
			return false
		}
		b.Description = ident.Clean(b.Description)
	case *mcp.EmbeddedResource:
		if b.Resource != nil && !a.contents(b.Resource) {
			return false
		}
	case *mcp.ImageContent:
		return a.field("image", "mimeType", b.MIMEType, false)
	case *mcp.AudioContent:
		return a.field("audio", "mimeType", b.MIMEType, false)
	}
	return true
}

// contents checks one resource's contents (of a read, or embedded).
func (a *admission) contents(rc *mcp.ResourceContents) bool {
	return a.field(rc.URI, "resource uri", rc.URI, true) && a.field(rc.URI, "resource mimeType", rc.MIMEType, false)
}

// admitToolResult checks a tool's result in place. It is on every
// call's path: a result without blocks that name anything costs a loop.
func (g *admitter) admitToolResult(name string, res *mcp.CallToolResult) {
	if res == nil || !slices.ContainsFunc(res.Content, names) {
		return
	}
	res.Content = g.admitContent("tool "+quoted(name)+"'s result", res.Content)
}

// names reports whether a content block holds identifiers to check.
func names(c mcp.Content) bool {
	switch c.(type) {
	case *mcp.ResourceLink, *mcp.EmbeddedResource, *mcp.ImageContent, *mcp.AudioContent:
		return true
	}
	return false
}

// admitPromptResult checks a prompt's messages in place: a message whose
// content fails is dropped.
func (g *admitter) admitPromptResult(name string, res *mcp.GetPromptResult) {
	if res == nil {
		return
	}
	a := &admission{g: g, kind: "message of prompt " + quoted(name), memo: "result"}
	out := res.Messages[:0]
	for _, m := range res.Messages {
		if m != nil && m.Content != nil && !a.block(m.Content) {
			continue
		}
		out = append(out, m)
	}
	res.Messages = out
	res.Description = ident.Clean(res.Description)
	a.done()
}

// admitRead checks a resource read's contents in place.
func (g *admitter) admitRead(uri string, res *mcp.ReadResourceResult) {
	if res == nil {
		return
	}
	a := &admission{g: g, kind: "contents of resource " + quoted(uri), memo: "read"}
	out := res.Contents[:0]
	for _, c := range res.Contents {
		if c != nil && !a.contents(c) {
			continue
		}
		out = append(out, c)
	}
	res.Contents = out
	a.done()
}

// admitCompletion keeps the completion values that pass.
func (g *admitter) admitCompletion(c *mcp.CompletionResultDetails) {
	if c == nil {
		return
	}
	a := &admission{g: g, kind: "completion value", memo: "completion"}
	out := c.Values[:0]
	for _, v := range c.Values {
		if a.field(v, "value", v, false) {
			out = append(out, v)
		}
	}
	c.Values = out
	a.done()
}
