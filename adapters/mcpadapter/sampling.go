package mcpadapter

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// samplingParams turns the sampling question of a 2026-07-28 upstream's
// input_required round, which the SDK decodes as
// *mcp.CreateMessageWithToolsParams whatever it holds, into the plain
// sampling request the relay puts to the client. A request that uses
// tools, or a message with several content blocks, has no plain form and
// is refused.
func samplingParams(p *mcp.CreateMessageWithToolsParams, upstream string) (*mcp.CreateMessageParams, error) {
	if p == nil {
		return &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{}}, nil
	}
	if len(p.Tools) > 0 || p.ToolChoice != nil {
		return nil, fmt.Errorf("mcpd cannot relay sampling/createMessage with tools from upstream %s", upstream)
	}
	msgs := make([]*mcp.SamplingMessage, 0, len(p.Messages))
	for _, m := range p.Messages {
		if m == nil {
			continue
		}
		if len(m.Content) > 1 {
			return nil, fmt.Errorf("mcpd cannot relay sampling/createMessage from upstream %s: a message has %d content blocks", upstream, len(m.Content))
		}
		var c mcp.Content
		if len(m.Content) == 1 {
			c = m.Content[0]
		}
		msgs = append(msgs, &mcp.SamplingMessage{Role: m.Role, Content: c})
	}
	return &mcp.CreateMessageParams{
		Meta:             p.Meta,
		IncludeContext:   p.IncludeContext,
		MaxTokens:        p.MaxTokens,
		Messages:         msgs,
		Metadata:         p.Metadata,
		ModelPreferences: p.ModelPreferences,
		StopSequences:    p.StopSequences,
		SystemPrompt:     p.SystemPrompt,
		Temperature:      p.Temperature,
	}, nil
}
