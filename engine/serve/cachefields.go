package serve

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's list and read results embed mcp.Cacheable, whose ttlMs and
// cacheScope are always marshalled: fields of the 2026-07-28 protocol only.
// A client of an earlier protocol gets the result through one of these
// wrappers, which marshal the same fields minus those two. They embed the
// result, so they are still an mcp.Result; building one costs nothing, and
// marshalling one costs what marshalling the result did.

type legacyTools struct{ *mcp.ListToolsResult }
type legacyPrompts struct{ *mcp.ListPromptsResult }
type legacyResources struct{ *mcp.ListResourcesResult }
type legacyTemplates struct {
	*mcp.ListResourceTemplatesResult
}
type legacyRead struct{ *mcp.ReadResourceResult }

func (r legacyTools) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta       mcp.Meta    `json:"_meta,omitempty"`
		NextCursor string      `json:"nextCursor,omitempty"`
		Tools      []*mcp.Tool `json:"tools"`
	}{r.Meta, r.NextCursor, r.Tools})
}

func (r legacyPrompts) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta       mcp.Meta      `json:"_meta,omitempty"`
		NextCursor string        `json:"nextCursor,omitempty"`
		Prompts    []*mcp.Prompt `json:"prompts"`
	}{r.Meta, r.NextCursor, r.Prompts})
}

func (r legacyResources) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta       mcp.Meta        `json:"_meta,omitempty"`
		NextCursor string          `json:"nextCursor,omitempty"`
		Resources  []*mcp.Resource `json:"resources"`
	}{r.Meta, r.NextCursor, r.Resources})
}

func (r legacyTemplates) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta              mcp.Meta                `json:"_meta,omitempty"`
		NextCursor        string                  `json:"nextCursor,omitempty"`
		ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates"`
	}{r.Meta, r.NextCursor, r.ResourceTemplates})
}

func (r legacyRead) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Meta     mcp.Meta                `json:"_meta,omitempty"`
		Contents []*mcp.ResourceContents `json:"contents"`
	}{r.Meta, r.Contents})
}

// forEra returns res as the session's protocol has it: unchanged for a
// 2026 client, without the 2026-only cache fields otherwise.
func forEra(s *mcp.ServerSession, res mcp.Result) mcp.Result {
	if isModernSession(s) {
		return res
	}
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		return legacyTools{r}
	case *mcp.ListPromptsResult:
		return legacyPrompts{r}
	case *mcp.ListResourcesResult:
		return legacyResources{r}
	case *mcp.ListResourceTemplatesResult:
		return legacyTemplates{r}
	case *mcp.ReadResourceResult:
		return legacyRead{r}
	}
	return res
}

// eraResult applies forEra to a handler's (result, error):
// eraResult(session)(handler(req)).
func eraResult(s *mcp.ServerSession) func(mcp.Result, error) (mcp.Result, error) {
	return func(res mcp.Result, err error) (mcp.Result, error) {
		if err != nil || res == nil {
			return res, err
		}
		return forEra(s, res), nil
	}
}
