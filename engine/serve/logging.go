package serve

import (
	"context"
	"log/slog"
)

// sdkHandler is the log handler given to the SDK. The SDK logs the life of
// every session at info level ("server connecting", "server session
// connected", "... disconnected", "session initialized"), and a 2026
// request is a session of its own: at info level, mcpd would write two or
// three lines per request. Those lines are demoted to debug; the SDK's
// warnings and errors pass unchanged.
type sdkHandler struct{ slog.Handler }

func demoteInfo(h slog.Handler) slog.Handler { return sdkHandler{h} }

func (h sdkHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demoted(l))
}

func (h sdkHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demoted(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h sdkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return sdkHandler{h.Handler.WithAttrs(as)}
}

func (h sdkHandler) WithGroup(name string) slog.Handler {
	return sdkHandler{h.Handler.WithGroup(name)}
}

func demoted(l slog.Level) slog.Level {
	if l >= slog.LevelInfo && l < slog.LevelWarn {
		return slog.LevelDebug
	}
	return l
}
