package adapter

import "github.com/mcpd/mcpd/engine/suggest"

// BackendSuggestion is ` Did you mean "x"?` when a backend of blockType that
// the config declares has a name close to name, else "".
func (b *ToolBlock) BackendSuggestion(blockType, name string) string {
	if b.BackendNames == nil {
		return ""
	}
	return suggest.DidYouMean(name, b.BackendNames(blockType))
}
