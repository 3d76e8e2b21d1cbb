package httpadapter

import (
	"bytes"
	"net/http"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Secrets are the values that env(), file() and filebase64() produce in a
// block's expressions, and the values of sensitive headers such as
// Authorization. mcpd never puts them in errors or output itself (errors
// name the method and the URL without its query string, never header
// values); as a second line of defence, a secret that an upstream echoes
// back (in an error page, say) is replaced by "[redacted]" in the errors,
// text, body and headers the adapter returns.

const redactedMark = "[redacted]"

// minSecretLen is the shortest value redacted: shorter values (a "1" from
// env("DEBUG")) would mangle unrelated text and reveal little.
const minSecretLen = 6

type secrets []string

// add records a secret value, and each space-separated word of it (so that
// the token of "Bearer <token>" is redacted on its own).
func (s *secrets) add(v string) {
	v = strings.TrimSpace(v)
	if len(v) >= minSecretLen && !authSchemes[strings.ToLower(v)] {
		*s = append(*s, v)
	}
	for _, w := range strings.Fields(v) {
		if len(w) >= minSecretLen && w != v && !authSchemes[strings.ToLower(w)] {
			*s = append(*s, w)
		}
	}
}

// authSchemes are the words of an Authorization header that are not
// secret: redacting "Bearer" everywhere would mangle unrelated text.
var authSchemes = map[string]bool{
	"bearer": true, "basic": true, "digest": true, "token": true, "apikey": true,
	"api-key": true, "negotiate": true, "hmac-sha256": true, "aws4-hmac-sha256": true,
}

// finish sorts longest first, so that a value is replaced before the words
// it contains, and removes duplicates.
func (s secrets) finish() secrets {
	sort.Slice(s, func(i, j int) bool {
		if len(s[i]) != len(s[j]) {
			return len(s[i]) > len(s[j])
		}
		return s[i] < s[j]
	})
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func (s secrets) merge(o secrets) secrets {
	if len(o) == 0 {
		return s
	}
	all := make(secrets, 0, len(s)+len(o))
	all = append(append(all, s...), o...)
	return all.finish()
}

func (s secrets) redact(text string) string {
	for _, v := range s {
		if strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, redactedMark)
		}
	}
	return text
}

func (s secrets) redactBytes(b []byte) []byte {
	for _, v := range s {
		if bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte(redactedMark))
		}
	}
	return b
}

var secretFuncs = map[string]bool{"env": true, "file": true, "filebase64": true}

// collectSecrets walks expr for calls of env(), file() and filebase64(),
// evaluates each now and records its value as a secret. Their arguments are
// known at load time (Scope.Check refuses any that depend on the call), and
// evaluation errors are left to the attribute's own evaluation.
func collectSecrets(d *decoder, expr hcl.Expression, out *secrets) {
	se, ok := expr.(hclsyntax.Expression)
	if !ok {
		return
	}
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok || !secretFuncs[call.Name] {
			return nil
		}
		for _, arg := range call.Args {
			if !adapter.IsStatic(arg) {
				return nil
			}
		}
		v, diags := call.Value(d.scope.EvalContext())
		if diags.HasErrors() {
			return nil
		}
		v, _ = v.UnmarkDeep()
		if !v.IsNull() && v.IsWhollyKnown() && v.Type() == cty.String {
			out.add(v.AsString())
		}
		return nil
	})
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
