package connect

import (
	"context"
	"html"
	"net/http"
	"time"
)

// CallbackHandler serves CallbackPath: the user's browser comes back from
// the authorization server with a code and the state mcpd sent, and mcpd
// turns them into the grant of the principal that asked. It needs no
// authentication of mcpd's own (a browser carries no bearer token): the
// state, random, single-use, short-lived and stored server-side with the
// principal it is for, is the proof. Mount it behind the listener's Host
// check. The page it answers shows no token and no code.
func (s *Service) CallbackHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		state, code := q.Get("state"), q.Get("code")
		if e := q.Get("error"); e != "" {
			// The user declined, or the server refused; the pending
			// record is left to expire (a retry of the link may follow).
			msg := clean(e)
			if d := q.Get("error_description"); d != "" {
				msg += ": " + clean(d)
			}
			page(w, http.StatusBadRequest, "Authorization not completed", "The authorization server answered "+msg+". Call the tool again for a new link.")
			return
		}
		if state == "" || code == "" || len(code) > maxToken {
			page(w, http.StatusBadRequest, "Authorization not completed", "This address takes the authorization server's redirect, with a code and a state.")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		info, err := s.complete(ctx, state, code)
		if err != nil {
			s.log.Warn("authorization callback failed", "err", err.Error())
			page(w, http.StatusBadRequest, "Authorization not completed", err.Error())
			return
		}
		page(w, http.StatusOK, "Connected", "mcpd may now call "+info.Upstream+" for "+info.Principal+". You can close this window and go back to your assistant.")
	})
}

func page(w http.ResponseWriter, status int, title, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("<!doctype html><meta charset=utf-8><title>mcpd: " + html.EscapeString(title) +
		"</title><body style=\"font-family:sans-serif;max-width:40em;margin:3em auto\"><h1>" + html.EscapeString(title) +
		"</h1><p>" + html.EscapeString(msg) + "</p></body>"))
}
