package httpadapter

import (
	"net/http"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/redact"
)

// Secrets are the values that env(), file() and filebase64() produce in a
// block's expressions, and the values of sensitive headers such as
// Authorization. mcpd never puts them in errors or output itself (errors
// name the method and the URL without its query string, never header
// values); as a second line of defence, a secret that an upstream echoes
// back (in an error page, say) is replaced by "[redacted]" in the errors,
// text, body (before and after JSON decoding) and headers the adapter
// returns, in every encoding package redact knows.

// secrets are one handler's (or one call's) secret values and the redactor
// built from them, in the engine's one redaction package: the adapter
// redacts early, before a value reaches result expressions, and the engine
// redacts again everything that leaves a tool.
type secrets struct {
	vals []string
	r    *redact.Redactor // nil until finish, or when there is nothing to redact
	// call redacts what only this call knows, after r: the bearer token
	// an identity block obtained, whose redactor is built once per token
	// rather than once per call.
	call *redact.Redactor
}

// with returns s that also redacts what r does.
func (s secrets) with(r *redact.Redactor) secrets {
	s.call = r
	return s
}

// add records a secret value, and each space-separated word of it (so that
// the token of "Bearer <token>" is redacted on its own). Values shorter than
// redact.MinLen are ignored by the redactor.
func (s *secrets) add(v string) {
	v = strings.TrimSpace(v)
	if len(v) >= redact.MinLen && !authSchemes[strings.ToLower(v)] {
		s.vals = append(s.vals, v)
	}
	for _, w := range strings.Fields(v) {
		if len(w) >= redact.MinLen && w != v && !authSchemes[strings.ToLower(w)] {
			s.vals = append(s.vals, w)
		}
	}
}

// addAll records the secret values vals (see add).
func (s *secrets) addAll(vals []string) {
	for _, v := range vals {
		s.add(v)
	}
}

// authSchemes are the words of an Authorization header that are not
// secret: redacting "Bearer" everywhere would mangle unrelated text.
var authSchemes = map[string]bool{
	"bearer": true, "basic": true, "digest": true, "token": true, "apikey": true,
	"api-key": true, "negotiate": true, "hmac-sha256": true, "aws4-hmac-sha256": true,
}

// finish builds the redactor.
func (s secrets) finish() secrets {
	s.r = redact.New(s.vals)
	return s
}

func (s secrets) merge(o secrets) secrets {
	if len(o.vals) == 0 {
		return s
	}
	all := make([]string, 0, len(s.vals)+len(o.vals))
	return secrets{vals: append(append(all, s.vals...), o.vals...), call: s.call}.finish()
}

func (s secrets) redact(text string) string { return s.call.String(s.r.String(text)) }

// redactBytes returns b, or a redacted copy; b itself is never modified.
func (s secrets) redactBytes(b []byte) []byte { return s.call.Bytes(s.r.Bytes(b)) }

// redactValue redacts every string of a decoded JSON value, keys included:
// after decoding, escapes the raw bytes hid are plain text.
func (s secrets) redactValue(v any) any { return s.call.Value(s.r.Value(v)) }

// collectSecrets records the values that env(), file() and filebase64()
// read in expr, the same way the engine records them for the whole config
// (funcs.RecordingTable; an env() default is not a secret). Their arguments
// are known at load time (Scope.Check refuses any that depend on the call),
// and evaluation errors are left to the attribute's own evaluation.
func collectSecrets(d *decoder, expr hcl.Expression, out *secrets) {
	var set redact.Set
	funcs.EvalSecretCalls(expr, &hcl.EvalContext{Functions: funcs.RecordingTable(d.Scope.Dir, &set)})
	out.vals = append(out.vals, set.Values()...)
}

// collectHeaderSecrets records the literal values of sensitive headers in a
// header map evaluated at load.
func collectHeaderSecrets(h map[string][]string, out *secrets) {
	for name, vals := range h {
		if sensitiveHeaders[http.CanonicalHeaderKey(name)] {
			for _, v := range vals {
				out.add(v)
			}
		}
	}
}
