package serve

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Clients of the 2026-07-28 protocol require `resultType: "complete"` on
// tools/call, prompts/get and resources/read results. The SDK sets it in its
// own handlers through an unexported field, which mcpd's handlers (answering
// from the snapshot) cannot reach; the field is, however, filled by the
// types' UnmarshalJSON. So one template of each, decoded once with the field
// set, is copied (a struct copy keeps unexported fields) and filled in.
var (
	completeCall   = template[mcp.CallToolResult](`{"content":[],"resultType":"complete"}`)
	completePrompt = template[mcp.GetPromptResult](`{"messages":[],"resultType":"complete"}`)
	completeRead   = template[mcp.ReadResourceResult](`{"contents":[],"resultType":"complete"}`)
)

func template[T any](js string) T {
	var v T
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		panic(err)
	}
	return v
}

// isModernSession reports whether the session speaks the 2026 protocol. A
// request without a session comes from the stateless fast path
// (fastpath.go), which serves 2026-07-28 requests alone.
func isModernSession(s *mcp.ServerSession) bool {
	if s == nil {
		return true
	}
	p := s.InitializeParams()
	return p != nil && p.ProtocolVersion >= protocol2026
}

func markCall(s *mcp.ServerSession, r *mcp.CallToolResult) *mcp.CallToolResult {
	if !isModernSession(s) {
		return r
	}
	out := completeCall
	out.Meta, out.Content, out.StructuredContent, out.IsError = r.Meta, r.Content, r.StructuredContent, r.IsError
	return &out
}

func markPrompt(s *mcp.ServerSession, r *mcp.GetPromptResult) *mcp.GetPromptResult {
	if !isModernSession(s) {
		return r
	}
	out := completePrompt
	out.Meta, out.Description, out.Messages = r.Meta, r.Description, r.Messages
	return &out
}

func markRead(s *mcp.ServerSession, r *mcp.ReadResourceResult) *mcp.ReadResourceResult {
	if !isModernSession(s) {
		return r
	}
	out := completeRead
	out.Meta, out.Cacheable, out.Contents = r.Meta, r.Cacheable, r.Contents
	return &out
}
