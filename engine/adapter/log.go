package adapter

import "slices"

// LogLevels are the MCP log levels (RFC 5424 severities), least severe
// first. A Request.Log record carries one of them; the client receives the
// records at or above the level it set with logging/setLevel (2025-11-25
// sessions) or in the request's _meta (2026-07-28).
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// ValidLogLevel reports whether level is one of LogLevels.
func ValidLogLevel(level string) bool { return slices.Contains(LogLevels, level) }
