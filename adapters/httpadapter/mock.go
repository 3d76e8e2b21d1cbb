package httpadapter

import (
	"fmt"
	"maps"
	"net/url"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
)

var _ adapter.Mocker = (*Adapter)(nil)

// MockBackend returns a copy of an http_backend's body with base_url
// replaced by a literal: the mock server's URL plus the path of the
// original base_url (https://example.com/api/v3 becomes
// http://127.0.0.1:PORT/api/v3), for `mcpd test`'s mock blocks
// (adapter.Mocker). The copy is a real hclsyntax body, so that everything
// that walks the syntax (secret recording for redaction, for one) sees the
// rest unchanged.
func (a *Adapter) MockBackend(b *adapter.BackendBlock, serverURL string) (hcl.Body, error) {
	sb, ok := b.Body.(*hclsyntax.Body)
	if !ok {
		return nil, fmt.Errorf("http_backend %q: cannot rewrite its base_url for mocking", b.Name)
	}
	base := serverURL
	rng := sb.SrcRange
	if at, ok := sb.Attributes["base_url"]; ok {
		rng = at.SrcRange
		if s, err := adapter.EvalString(at.Expr, b.Scope.EvalContext()); err == nil {
			if u, err := url.Parse(s); err == nil {
				base += strings.TrimRight(u.EscapedPath(), "/")
			}
		}
	}
	nb := *sb
	// A mock answers whatever it is sent: the backend's identity block
	// (which would ask an authorization server for tokens) is left out.
	nb.Blocks = nil
	for _, blk := range sb.Blocks {
		if blk.Type != "identity" {
			nb.Blocks = append(nb.Blocks, blk)
		}
	}
	nb.Attributes = maps.Clone(sb.Attributes)
	if nb.Attributes == nil {
		nb.Attributes = hclsyntax.Attributes{}
	}
	nb.Attributes["base_url"] = &hclsyntax.Attribute{
		Name:      "base_url",
		Expr:      &hclsyntax.LiteralValueExpr{Val: cty.StringVal(base), SrcRange: rng},
		SrcRange:  rng,
		NameRange: rng,
	}
	return &nb, nil
}
