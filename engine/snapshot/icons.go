package snapshot

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/config"
)

// mcpIcons turns icon blocks (checked at load) into the icons a list, the
// server's info and its Server Card carry; nil for none, so that nothing
// is added to the JSON of an item without icons.
func mcpIcons(icons []*config.Icon) []mcp.Icon {
	if len(icons) == 0 {
		return nil
	}
	out := make([]mcp.Icon, len(icons))
	for i, ic := range icons {
		out[i] = mcp.Icon{Source: ic.Src, MIMEType: ic.MIMEType, Sizes: ic.Sizes, Theme: mcp.IconTheme(ic.Theme)}
	}
	return out
}

// Implementation is the server's info as clients see it (initialize's
// serverInfo, the _meta of 2026-07-28 results) and the Server Card shows.
func (i ServerInfo) Implementation() *mcp.Implementation {
	return &mcp.Implementation{Name: i.Name, Version: i.Version, Title: i.Title, Description: i.Description, WebsiteURL: i.WebsiteURL, Icons: i.Icons}
}
