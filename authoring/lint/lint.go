// Package lint gives the advice `mcpd lint` prints: things a valid config
// does that a reviewer would question. It reads the syntax of the files a
// config was loaded from (so every warning points at the exact attribute)
// and asks the adapters that implement adapter.Linter about their blocks;
// it never compiles the config or opens a backend, and an env() variable
// that is unset only leaves the attribute that uses it unchecked, so it runs
// in CI without the config's secrets. Errors are validate's job.
package lint

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
)

// Lint returns the warnings for cfg, which must have loaded without errors,
// sorted by position.
func Lint(cfg *config.Config, reg *adapter.Registry) hcl.Diagnostics {
	l := &linter{reg: reg, backends: map[string]hcl.Body{}, adapters: map[string]bool{}}
	for _, b := range reg.ToolBlocks() {
		l.adapters[b] = true
	}
	type file struct {
		body *hclsyntax.Body
		dir  string
	}
	var files []file
	for _, name := range cfg.Files {
		f, diags := hclsyntax.ParseConfig(cfg.Sources[name], name, hcl.InitialPos)
		if diags.HasErrors() {
			continue // cannot happen for a config that loaded
		}
		body := f.Body.(*hclsyntax.Body)
		files = append(files, file{body, filepath.Dir(name)})
		for _, b := range body.Blocks {
			if len(b.Labels) == 1 {
				l.backends[b.Type+"\x00"+b.Labels[0]] = b.Body
			}
		}
	}
	for _, f := range files {
		ectx := &hcl.EvalContext{Functions: funcs.Table(f.dir)}
		for _, b := range f.body.Blocks {
			switch b.Type {
			case "tool":
				l.tool(b, ectx)
			case "prompt":
				l.prompt(b)
			}
		}
		l.secrets(f.body)
	}
	return config.SortDiagnostics(l.diags)
}

type linter struct {
	reg      *adapter.Registry
	backends map[string]hcl.Body // "type\x00name" → body
	adapters map[string]bool
	diags    hcl.Diagnostics
}

func (l *linter) warn(rng hcl.Range, summary, detail string) {
	l.diags = append(l.diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: detail, Subject: &rng})
}

func (l *linter) tool(b *hclsyntax.Block, ectx *hcl.EvalContext) {
	name := b.Labels[0]
	l.description(b, ectx, "Tool", fmt.Sprintf("tool %q", name),
		"The model picks tools by their descriptions: say what the tool does, what it returns and when to use it.")
	var readOnly, destructive *bool
	var adapterBlock *hclsyntax.Block
	for _, inner := range b.Body.Blocks {
		switch {
		case inner.Type == "param" && len(inner.Labels) == 1:
			l.description(inner, ectx, "Param", fmt.Sprintf("param %q of tool %q", inner.Labels[0], name),
				"The model fills arguments from their descriptions: say what the value means and its format.")
		case inner.Type == "annotations":
			readOnly = literalBool(inner.Body.Attributes["read_only"], ectx)
			destructive = literalBool(inner.Body.Attributes["destructive"], ectx)
		case l.adapters[inner.Type] && adapterBlock == nil:
			adapterBlock = inner
		}
	}
	if adapterBlock == nil {
		return
	}
	a, ok := l.reg.Adapter(adapterBlock.Type)
	if !ok {
		return
	}
	if linter, ok := a.(adapter.Linter); ok {
		l.diags = append(l.diags, linter.LintTool(&adapter.LintTool{
			Tool: name, Body: adapterBlock.Body, Range: adapterBlock.DefRange(),
			ReadOnly: readOnly, Destructive: destructive, Eval: ectx,
			BackendBody: func(typ, name string) (hcl.Body, bool) {
				body, ok := l.backends[typ+"\x00"+name]
				return body, ok
			},
		})...)
	}
}

// description warns about a block without a description, or with one that
// is a single word ("Search", "TODO").
func (l *linter) description(b *hclsyntax.Block, ectx *hcl.EvalContext, kind, what, why string) {
	attr := b.Body.Attributes["description"]
	if attr == nil {
		l.warn(b.LabelRanges[0], kind+" without a description", fmt.Sprintf("%s has no description. %s", what, why))
		return
	}
	v, diags := attr.Expr.Value(ectx)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return
	}
	if len(strings.Fields(v.AsString())) < 2 {
		l.warn(attr.Expr.Range(), "One-word description", fmt.Sprintf("The description of %s is %q. %s", what, strings.TrimSpace(v.AsString()), why))
	}
}

func literalBool(a *hclsyntax.Attribute, ectx *hcl.EvalContext) *bool {
	if a == nil {
		return nil
	}
	v, diags := a.Expr.Value(ectx)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.Bool) {
		return nil
	}
	b := v.True()
	return &b
}

// prompt warns about an optional argument interpolated bare: a client that
// leaves it out gets an error instead of a prompt.
func (l *linter) prompt(b *hclsyntax.Block) {
	optional := map[string]bool{}
	for _, inner := range b.Body.Blocks {
		if inner.Type != "argument" || len(inner.Labels) != 1 {
			continue
		}
		req := literalBool(inner.Body.Attributes["required"], nil)
		if req == nil || !*req {
			optional[inner.Labels[0]] = true
		}
	}
	if len(optional) == 0 {
		return
	}
	for _, inner := range b.Body.Blocks {
		if inner.Type != "message" {
			continue
		}
		walkAttributes(inner.Body, func(_ string, e hclsyntax.Expression) {
			l.bareOptional(b.Labels[0], e, optional)
		})
	}
}

func (l *linter) bareOptional(prompt string, e hclsyntax.Expression, optional map[string]bool) {
	// A fallback is what gives an optional argument a value when it is
	// left out: a coalesce, try or can call around it, or a conditional
	// that tests it.
	type fallback struct {
		rng   hcl.Range
		names map[string]bool // nil: for every argument (coalesce, try)
	}
	var fallbacks []fallback
	var refs []*hclsyntax.ScopeTraversalExpr
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n := n.(type) {
		case *hclsyntax.FunctionCallExpr:
			if n.Name == "coalesce" || n.Name == "try" || n.Name == "can" {
				fallbacks = append(fallbacks, fallback{rng: n.Range()})
			}
		case *hclsyntax.ConditionalExpr:
			names := map[string]bool{}
			for _, t := range n.Condition.Variables() {
				if a, ok := argName(t); ok {
					names[a] = true
				}
			}
			fallbacks = append(fallbacks, fallback{rng: n.Range(), names: names})
		case *hclsyntax.ScopeTraversalExpr:
			refs = append(refs, n)
		}
		return nil
	})
	for _, r := range refs {
		name, ok := argName(r.Traversal)
		if !ok || !optional[name] {
			continue
		}
		covered := false
		for _, f := range fallbacks {
			if contains(f.rng, r.Range()) && (f.names == nil || f.names[name]) {
				covered = true
				break
			}
		}
		if !covered {
			l.warn(r.Range(), "Optional argument used without coalesce",
				fmt.Sprintf("Argument %q of prompt %q is optional, and a client that leaves it out gets an error instead of the prompt. Write coalesce(args.%s, \"...\") or declare it required = true.", name, prompt, name))
		}
	}
}

// argName is x in args.x or args["x"].
func argName(t hcl.Traversal) (string, bool) {
	if len(t) < 2 || t.RootName() != "args" {
		return "", false
	}
	switch s := t[1].(type) {
	case hcl.TraverseAttr:
		return s.Name, true
	case hcl.TraverseIndex:
		if s.Key.Type().Equals(cty.String) && s.Key.IsKnown() && !s.Key.IsNull() {
			return s.Key.AsString(), true
		}
	}
	return "", false
}

func contains(outer, inner hcl.Range) bool {
	return outer.Filename == inner.Filename && outer.Start.Byte <= inner.Start.Byte && inner.End.Byte <= outer.End.Byte
}

// walkAttributes calls fn for every attribute of body and its nested blocks.
func walkAttributes(body *hclsyntax.Body, fn func(name string, e hclsyntax.Expression)) {
	names := make([]string, 0, len(body.Attributes))
	for n := range body.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fn(n, body.Attributes[n].Expr)
	}
	for _, b := range body.Blocks {
		walkAttributes(b.Body, fn)
	}
}

// secrets warns about strings that look like credentials written into the
// config, where they end up in version control and in every copy of the
// file: they belong in env("NAME") or file("path").
func (l *linter) secrets(body *hclsyntax.Body) {
	top := &hclsyntax.Body{Attributes: body.Attributes}
	for _, b := range body.Blocks {
		// Test blocks hold made-up arguments and mock answers, not
		// credentials the server uses.
		if b.Type != "test" {
			top.Blocks = append(top.Blocks, b)
		}
	}
	walkAttributes(top, func(name string, e hclsyntax.Expression) {
		l.secretExpr(name, e)
	})
}

func (l *linter) secretExpr(name string, e hclsyntax.Expression) {
	const fix = "Read it from the environment or a file instead: env(\"NAME\") or file(\"path\") (docs/config.md, Functions)."
	if secretName(name) {
		if s, ok := literalString(e); ok && s != "" {
			l.warn(e.Range(), "Inline secret", fmt.Sprintf("%s is written into the config. %s", name, fix))
			return
		}
	}
	if obj, ok := e.(*hclsyntax.ObjectConsExpr); ok {
		for _, item := range obj.Items {
			key := ""
			if k, ok := literalString(item.KeyExpr); ok {
				key = k
			} else if kx, ok := item.KeyExpr.(*hclsyntax.ObjectConsKeyExpr); ok {
				if t, ok := kx.Wrapped.(*hclsyntax.ScopeTraversalExpr); ok && len(t.Traversal) == 1 {
					key = t.Traversal.RootName()
				}
			}
			l.secretExpr(key, item.ValueExpr)
		}
		return
	}
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		lit, ok := n.(*hclsyntax.LiteralValueExpr)
		if !ok || !lit.Val.Type().Equals(cty.String) || lit.Val.IsNull() {
			return nil
		}
		if why, ok := secretText(lit.Val.AsString()); ok {
			l.warn(lit.Range(), "Inline secret", fmt.Sprintf("This string looks like %s. %s", why, fix))
		}
		return nil
	})
}

// literalString is the value of an expression that is a string without
// interpolations.
func literalString(e hclsyntax.Expression) (string, bool) {
	if kx, ok := e.(*hclsyntax.ObjectConsKeyExpr); ok {
		e = kx.Wrapped
	}
	v, diags := e.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return "", false
	}
	return v.AsString(), true
}

// secretName reports whether an attribute or key name says its value is a
// credential ("password", "api_key", "X-Api-Key", "client_secret").
func secretName(name string) bool {
	n := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	for _, s := range []string{"password", "passwd", "secret", "token", "api_key", "apikey", "access_key", "private_key", "authorization"} {
		if n == s || strings.HasSuffix(n, "_"+s) {
			return true
		}
	}
	return false
}

var (
	// tokenPrefix matches the documented prefixes of common API tokens,
	// followed by enough token characters to be a real one.
	tokenPrefix = regexp.MustCompile(`(?:^|[^A-Za-z0-9])((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}|(?:sk|rk)_live_[A-Za-z0-9]{16,}|xox[abposr]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})`)
	// urlPassword matches a URL with a password in its user info.
	urlPassword = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^@\s/]+@`)
	// word is a run of the characters keys and tokens are written in.
	word = regexp.MustCompile(`[A-Za-z0-9+/=_-]{32,}`)
)

// maxKeyLen is the longest run of key characters taken for a key.
const maxKeyLen = 200

// secretText reports whether s contains something that looks like a
// credential, and what.
func secretText(s string) (string, bool) {
	if strings.HasPrefix(s, "data:image/") {
		// An inline icon (icon { src = "data:image/png;base64,..." }):
		// its base64 is image data, however random it looks.
		return "", false
	}
	if tokenPrefix.MatchString(s) {
		return "an API token (by its prefix)", true
	}
	if urlPassword.MatchString(s) {
		return "a URL with a password", true
	}
	for _, w := range word.FindAllString(s, -1) {
		// Longer runs are data (an inline base64 image), not a key.
		if len(w) <= maxKeyLen && highEntropy(w) {
			return "a key or token (a long random string)", true
		}
	}
	return "", false
}

// highEntropy reports whether w looks random: upper and lower case letters
// and digits mixed, at more than 4 bits of Shannon entropy per character
// (identifiers, words and hex digests stay below).
func highEntropy(w string) bool {
	var upper, lower, digit bool
	counts := map[rune]int{}
	for _, c := range w {
		counts[c]++
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	if !upper || !lower || !digit {
		return false
	}
	var h float64
	n := float64(len(w))
	for _, k := range counts {
		p := float64(k) / n
		h -= p * math.Log2(p)
	}
	return h > 4.0
}
