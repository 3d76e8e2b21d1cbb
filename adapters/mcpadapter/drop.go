package mcpadapter

import (
	"fmt"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/schema"
)

// What an upstream lists that mcpd will not serve costs that definition
// only: it is left out of the listing, logged with its reason and
// counted (mcpd_upstream_dropped_total), and the upstream's other
// definitions keep serving.

// dropCounts counts what was left out, by reason.
type dropCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

func (d *dropCounts) add(reason string) { d.addN(reason, 1) }

func (d *dropCounts) addN(reason string, n int64) {
	d.mu.Lock()
	if d.n == nil {
		d.n = map[string]int64{}
	}
	d.n[reason] += n
	d.mu.Unlock()
}

func (d *dropCounts) snapshot() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.n)
}

// droppedDeep reports a definition (or message) left out of what the
// upstream sent because it is nested deeper than the SDK decodes
// (deep.go).
func (g *admitter) droppedDeep(kind, name string) {
	g.drops.add("depth")
	g.log.Warn("upstream "+kind+" dropped: nested deeper than mcpd decodes", "name", name, "limit", sdkMaxDepth)
}

// checkTools leaves out of a tools/list the tools whose input or output
// schema schema.CheckBounds refuses: validating against it could recurse
// without end (a $ref cycle) or cost without bound.
func (g *admitter) checkTools(tools []*mcp.Tool, expose *exposeConfig) []*mcp.Tool {
	out := tools[:0:0]
	for _, t := range tools {
		if expose.matches(t.Name) {
			if err := checkToolSchemas(t); err != nil {
				g.drops.add("schema")
				g.log.Warn("upstream tool dropped: its schema is refused", "tool", t.Name, "err", err)
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// checkToolSchemas refuses a tool whose schemas schema.CheckBounds
// refuses, except for references mcpd cannot follow: such a schema is
// not validated by mcpd (the upstream validates its own arguments), as
// before.
func checkToolSchemas(t *mcp.Tool) error {
	for _, s := range []any{t.InputSchema, t.OutputSchema} {
		if m := jsonObject(s); m != nil {
			if be, refused := schema.IsBoundsError(schema.CheckBounds(m)); refused && !be.Unchecked() {
				return be
			}
		}
	}
	return nil
}

// checkForm refuses an elicitation whose form (requestedSchema)
// schema.CheckForm refuses: the SDK checks the client's answer against it, and a cyclic
// form would overflow the stack there as a tool's schema would.
func (g *admitter) checkForm(req mcp.InputRequest) error {
	p, ok := req.(*mcp.ElicitParams)
	if !ok || p.RequestedSchema == nil {
		return nil
	}
	m := jsonObject(p.RequestedSchema)
	if m == nil {
		return nil
	}
	// Every refusal counts here, references mcpd cannot follow too: the
	// SDK may resolve what mcpd cannot, and then validate against it.
	if err := schema.CheckForm(m); err != nil {
		g.drops.add("schema")
		g.log.Warn("upstream elicitation refused: its form's schema is refused", "err", err)
		return fmt.Errorf("upstream %s asked with a form mcpd refuses: %v", g.name, err)
	}
	return nil
}
