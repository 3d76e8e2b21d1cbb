package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// Middleware authenticates the requests to the MCP endpoint with the
// current Config.
type Middleware struct {
	// Current returns the Config of the snapshot being served (nil: auth
	// off). It is called once per request.
	Current func() *Config
	// Required refuses every request while Current is nil: the server
	// listens where it must not run without auth, and a reload removed the
	// auth block. Failing closed beats serving everyone.
	Required bool
	Logger   *slog.Logger
}

// Wrap returns next behind authentication: a request without a valid
// token is answered 401, one that lacks a scope the auth block requires
// 403, both with a WWW-Authenticate header; a verified caller reaches next with its
// principal in the SDK's TokenInfo.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := m.Current()
		if c == nil {
			if m.Required {
				m.Logger.Error("refusing an HTTP request: the config has no auth block, and this address needs one (or --insecure-no-auth)")
				http.Error(w, "authentication is not configured on this server", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		c.serve(w, r, next, m.Logger)
	})
}

// token returns the bearer token of r, from Authorization or the extra
// API key header.
func (c *Config) token(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
		if ok && strings.EqualFold(scheme, "bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	if c.header != "" {
		return strings.TrimSpace(r.Header.Get(c.header))
	}
	return ""
}

func (c *Config) serve(w http.ResponseWriter, r *http.Request, next http.Handler, logger *slog.Logger) {
	tok := c.token(r)
	if tok == "" {
		how := "Authorization: Bearer <token>"
		if c.header != "" {
			how += " or " + c.header + ": <key>"
		}
		c.challenge(w, http.StatusUnauthorized, "", "", "authentication required: send "+how)
		return
	}
	p, exp, err := c.verify(r.Context(), tok)
	if err != nil {
		if errors.Is(err, errUnavailable) {
			logger.Error("cannot verify a token", "err", err)
			http.Error(w, "cannot verify tokens now; try again later", http.StatusServiceUnavailable)
			return
		}
		// The reason goes to the log, never the token.
		logger.Info("rejected a token", "remote", r.RemoteAddr, "reason", err.Error())
		c.challenge(w, http.StatusUnauthorized, "invalid_token", "", "invalid token: "+err.Error())
		return
	}
	if !p.HasScopes(c.scopes) {
		c.challenge(w, http.StatusForbidden, "insufficient_scope", strings.Join(c.scopes, " "),
			fmt.Sprintf("insufficient scope: this server needs the scopes %q", strings.Join(c.scopes, " ")))
		return
	}
	if p.Method == "oauth" {
		// The token goes with its verified caller, for the backends that
		// exchange or forward it (a principal never prints it).
		p = p.WithToken(tok, exp)
	}
	ti := p.TokenInfo()
	ti.Expiration = exp
	// RequireBearerToken is the SDK's one way to put TokenInfo where its
	// transport reads it (and binds legacy sessions to ti.UserID); the
	// token is verified already, so its verifier just hands ti over. It
	// reads Authorization only, so a key sent in the extra header is
	// copied there.
	if r.Header.Get("Authorization") == "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	opts := &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: exp.IsZero(), ClockSkew: c.leeway()}
	sdkauth.RequireBearerToken(func(context.Context, string, *http.Request) (*sdkauth.TokenInfo, error) {
		return ti, nil
	}, opts)(next).ServeHTTP(w, r)
}

func (c *Config) leeway() time.Duration {
	if c.oauth != nil {
		return c.oauth.leeway
	}
	return 0
}

// challenge answers a failed authentication (RFC 6750 section 3), pointing
// OAuth clients to the Protected Resource Metadata (RFC 9728).
func (c *Config) challenge(w http.ResponseWriter, code int, errCode, scope, msg string) {
	var params []string
	if c.prmURL != "" {
		params = append(params, fmt.Sprintf("resource_metadata=%q", c.prmURL))
	} else {
		params = append(params, `realm="mcpd"`)
	}
	if errCode != "" {
		params = append(params, fmt.Sprintf("error=%q", errCode))
	}
	if scope != "" {
		params = append(params, fmt.Sprintf("scope=%q", scope))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	http.Error(w, msg, code)
}

// MetadataHandler serves the current Config's Protected Resource Metadata
// (RFC 9728), or 404 when OAuth is not configured.
func MetadataHandler(current func() *Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := current()
		if c == nil || c.prm == nil {
			http.NotFound(w, r)
			return
		}
		c.prm.ServeHTTP(w, r)
	})
}

// MetadataPaths are where MetadataHandler belongs: the well-known path and
// its form suffixed with the MCP endpoint's path.
func MetadataPaths() []string {
	return []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}
}

// InsufficientScope answers 403 with the WWW-Authenticate challenge of a
// caller that lacks the scopes a part of the server needs (a toolset's),
// as the middleware answers one that lacks the auth block's. A nil Config
// answers a plain 403.
func (c *Config) InsufficientScope(w http.ResponseWriter, scopes []string, msg string) {
	if c == nil {
		http.Error(w, msg, http.StatusForbidden)
		return
	}
	c.challenge(w, http.StatusForbidden, "insufficient_scope", strings.Join(scopes, " "), msg)
}
