package lsp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	protocol "github.com/tliron/glsp/protocol_3_16"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
)

// paramTypes are the types a param may declare (the loader's list).
var paramTypes = []string{"string", "integer", "number", "boolean", "array", "object"}

// declared is a top-level block of a config directory: a backend, a tool.
type declared struct {
	file  string
	src   []byte
	block *hclsyntax.Block
}

// declarations parses every config file of dir (open buffers first) and
// returns its top-level labelled blocks by type and name.
func (s *Server) declarations(dir string) map[string]map[string]declared {
	out := map[string]map[string]declared{}
	names := map[string]bool{}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			names[filepath.Join(dir, e.Name())] = true
		}
	}
	s.mu.Lock()
	for n := range s.docs {
		if filepath.Dir(n) == dir {
			names[n] = true
		}
	}
	s.mu.Unlock()
	sorted := make([]string, 0, len(names))
	for n := range names {
		if isConfig(n) {
			sorted = append(sorted, n)
		}
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		src := s.readSource(n)
		f, _ := hclsyntax.ParseConfig(src, n, hcl.InitialPos)
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		for _, b := range body.Blocks {
			if len(b.Labels) == 0 {
				continue
			}
			if out[b.Type] == nil {
				out[b.Type] = map[string]declared{}
			}
			if _, dup := out[b.Type][b.Labels[0]]; !dup {
				out[b.Type][b.Labels[0]] = declared{file: n, src: src, block: b}
			}
		}
	}
	return out
}

// backendRef is the backend block type that attribute attr of the adapter
// block sc names, or "": a BackendAdapter's tool block names its backend
// with an attribute called "backend" or after the backend block itself
// (`database = "main"`).
func (s *Server) backendRef(sc *blockSchema, attr string) string {
	if sc == nil || sc.adapter == "" {
		return ""
	}
	a, ok := s.reg.Adapter(sc.adapter)
	if !ok {
		return ""
	}
	ba, ok := a.(adapter.BackendAdapter)
	if !ok {
		return ""
	}
	if attr == "backend" || attr == ba.BackendBlock() {
		return ba.BackendBlock()
	}
	return ""
}

var (
	reArgs        = regexp.MustCompile(`args\.([A-Za-z0-9_]*)$`)
	reStringValue = regexp.MustCompile(`^\s*([A-Za-z0-9_]+)\s*=\s*"([A-Za-z0-9_.-]*)$`)
	reValue       = regexp.MustCompile(`^\s*([A-Za-z0-9_]+)\s*=\s*(?:.*[^A-Za-z0-9_."])?([A-Za-z0-9_]*)$`)
	reName        = regexp.MustCompile(`^\s*([A-Za-z0-9_]*)$`)
)

func (s *Server) complete(name string, pos protocol.Position) []protocol.CompletionItem {
	src := s.readSource(name)
	off := offset(src, pos)
	c := cursorAt(src, off)
	path, inBlocks := c.blocks()
	items := []protocol.CompletionItem{}
	add := func(label string, kind protocol.CompletionItemKind, detail, insert string) {
		it := protocol.CompletionItem{Label: label, Kind: &kind}
		if detail != "" {
			d := detail
			it.Detail = &d
		}
		if insert != "" {
			it.InsertText = &insert
		}
		items = append(items, it)
	}
	if m := reArgs.FindStringSubmatch(c.prefix); m != nil {
		for _, p := range s.paramsOf(src, off) {
			add(p, protocol.CompletionItemKindVariable, "param", "")
		}
		return items
	}
	sc, _ := s.schemaAt(path)
	if m := reStringValue.FindStringSubmatch(c.prefix); m != nil && inBlocks {
		attr := m[1]
		switch {
		case s.backendRef(sc, attr) != "":
			typ := s.backendRef(sc, attr)
			for _, n := range sortedNames(s.declarations(filepath.Dir(name))[typ]) {
				add(n, protocol.CompletionItemKindReference, typ, "")
			}
		case attr == "type" && len(path) > 0 && path[len(path)-1] == "param":
			for _, t := range paramTypes {
				add(t, protocol.CompletionItemKindEnumMember, "param type", "")
			}
		}
		return items
	}
	if m := reValue.FindStringSubmatch(c.prefix); m != nil && strings.Count(c.prefix, `"`)%2 == 0 {
		for _, f := range sortedNames(funcs.Table(filepath.Dir(name))) {
			add(f, protocol.CompletionItemKindFunction, "function", f+"(")
		}
		add("args", protocol.CompletionItemKindVariable, "the call's arguments", "")
		return items
	}
	if reName.MatchString(c.prefix) && inBlocks && sc != nil {
		_, key := s.schemaAt(path)
		for _, a := range sc.attrs {
			detail := "optional"
			if a.Required {
				detail = "required"
			}
			it := protocol.CompletionItem{Label: a.Name, Detail: &detail}
			kind := protocol.CompletionItemKindProperty
			it.Kind = &kind
			insert := a.Name + " = "
			it.InsertText = &insert
			if d := doc(join(key, a.Name)); d != "" {
				it.Documentation = protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: d}
			}
			items = append(items, it)
		}
		for _, b := range sc.blockNames() {
			insert := b + " {\n}"
			if len(sc.labels[b]) > 0 {
				insert = b + ` "" {` + "\n}"
			}
			it := protocol.CompletionItem{Label: b}
			kind := protocol.CompletionItemKindClass
			it.Kind = &kind
			detail := "block"
			it.Detail = &detail
			it.InsertText = &insert
			if d := doc(s.blockKey(path, b)); d != "" {
				it.Documentation = protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: d}
			}
			items = append(items, it)
		}
	}
	return items
}

func (s *Server) blockKey(path []string, typ string) string {
	_, key := s.schemaAt(append(append([]string{}, path...), typ))
	return key
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// paramsOf lists the params of the tool or prompt around off.
func (s *Server) paramsOf(src []byte, off int) []string {
	_, params := enclosingParams(src, off)
	return sortedNames(params)
}

// enclosingParams returns the outermost block around off and its param
// blocks by name.
func enclosingParams(src []byte, off int) (*hclsyntax.Block, map[string]*hclsyntax.Block) {
	f, _ := hclsyntax.ParseConfig(src, "", hcl.InitialPos)
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return nil, nil
	}
	blocks := syntaxBlocks(body, off)
	if len(blocks) == 0 {
		return nil, nil
	}
	out := map[string]*hclsyntax.Block{}
	for _, b := range blocks[0].Body.Blocks {
		if b.Type == "param" && len(b.Labels) > 0 {
			out[b.Labels[0]] = b
		}
	}
	return blocks[0], out
}

// parseAt parses the buffer name (as the editor holds it) and finds the
// blocks around pos, outermost first: what hover, definition and
// references start from. body is nil when the text is not HCL at all.
func (s *Server) parseAt(name string, pos protocol.Position) (src []byte, off int, body *hclsyntax.Body, blocks []*hclsyntax.Block) {
	src = s.readSource(name)
	off = offset(src, pos)
	f, _ := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return src, off, nil, nil
	}
	return src, off, body, syntaxBlocks(body, off)
}

func (s *Server) hover(name string, pos protocol.Position) *protocol.Hover {
	src, off, body, blocks := s.parseAt(name, pos)
	if body == nil {
		return nil
	}
	path := make([]string, len(blocks))
	for i, b := range blocks {
		path[i] = b.Type
	}
	var text string
	var rng hcl.Range
	if len(blocks) > 0 {
		inner := blocks[len(blocks)-1]
		if within(inner.TypeRange, off) || (len(inner.LabelRanges) > 0 && within(inner.LabelRanges[0], off)) {
			_, key := s.schemaAt(path)
			text = fmt.Sprintf("**%s** block\n\n%s", inner.Type, doc(key))
			rng = inner.TypeRange
			if inner.Type == "param" && len(blocks) == 2 && blocks[0].Type == "tool" && len(blocks[0].Labels) > 0 && len(inner.Labels) > 0 {
				text += s.paramSchema(filepath.Dir(name), blocks[0].Labels[0], inner.Labels[0])
			}
		}
	}
	if text == "" {
		a := attributeAt(blocks, body, off)
		if a == nil {
			return nil
		}
		if !within(a.NameRange, off) {
			return s.hoverArg(filepath.Dir(name), blocks, a, off, src)
		}
		sc, key := s.schemaAt(path)
		req := ""
		if sc != nil {
			if as, ok := sc.attr(a.Name); ok {
				req = " (optional)"
				if as.Required {
					req = " (required)"
				}
			}
		}
		text = fmt.Sprintf("**%s**%s\n\n%s", a.Name, req, doc(join(key, a.Name)))
		if v, ok := staticValue(a.Expr); ok {
			text += "\n\nValue: `" + v + "`"
		}
		rng = a.NameRange
	}
	r := toRange(rng, src)
	return &protocol.Hover{Contents: protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: strings.TrimSpace(text)}, Range: &r}
}

// hoverArg is the hover of args.NAME in an expression: the param's JSON
// Schema.
func (s *Server) hoverArg(dir string, blocks []*hclsyntax.Block, a *hclsyntax.Attribute, off int, src []byte) *protocol.Hover {
	if len(blocks) == 0 || blocks[0].Type != "tool" || len(blocks[0].Labels) == 0 {
		return nil
	}
	var found *hclsyntax.ScopeTraversalExpr
	hclsyntax.VisitAll(a.Expr, func(n hclsyntax.Node) hcl.Diagnostics {
		if st, ok := n.(*hclsyntax.ScopeTraversalExpr); ok && within(st.SrcRange, off) && st.Traversal.RootName() == "args" && len(st.Traversal) > 1 {
			found = st
		}
		return nil
	})
	if found == nil {
		return nil
	}
	attr, ok := found.Traversal[1].(hcl.TraverseAttr)
	if !ok {
		return nil
	}
	text := fmt.Sprintf("**args.%s**: param %q of tool %q", attr.Name, attr.Name, blocks[0].Labels[0]) + s.paramSchema(dir, blocks[0].Labels[0], attr.Name)
	r := toRange(found.SrcRange, src)
	return &protocol.Hover{Contents: protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: text}, Range: &r}
}

// paramSchema is the JSON Schema param compiles to, from the last load of
// the tool that had no errors.
func (s *Server) paramSchema(dir, tool, param string) string {
	s.mu.Lock()
	in, _ := s.inputs[dir][tool].(map[string]any)
	s.mu.Unlock()
	props, _ := in["properties"].(map[string]any)
	p, ok := props[param]
	if !ok {
		return ""
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return ""
	}
	return "\n\nJSON Schema:\n```json\n" + string(b) + "\n```"
}

// staticValue is the value of an expression that needs nothing to be
// evaluated: no variables and no function calls (so never a secret read
// with env() or file()), as JSON.
func staticValue(expr hclsyntax.Expression) (string, bool) {
	if len(expr.Variables()) > 0 {
		return "", false
	}
	calls := false
	hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
		if _, ok := n.(*hclsyntax.FunctionCallExpr); ok {
			calls = true
		}
		return nil
	})
	if calls {
		return "", false
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return "", false
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return "", false
	}
	return string(b), true
}

var rePlaceholder = regexp.MustCompile(`(?::|\{\{\s*)([A-Za-z_][A-Za-z0-9_]*)`)

func (s *Server) definition(name string, pos protocol.Position) *protocol.Location {
	src, off, body, blocks := s.parseAt(name, pos)
	if body == nil {
		return nil
	}
	a := attributeAt(blocks, body, off)
	if a == nil || !within(a.Expr.Range(), off) {
		return nil
	}
	path := make([]string, len(blocks))
	for i, b := range blocks {
		path[i] = b.Type
	}
	sc, _ := s.schemaAt(path)
	// A backend named by the adapter block.
	if typ := s.backendRef(sc, a.Name); typ != "" {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type().FriendlyName() != "string" {
			return nil
		}
		d, ok := s.declarations(filepath.Dir(name))[typ][v.AsString()]
		if !ok {
			return nil
		}
		return location(d.file, d.block.LabelRanges[0], d.src)
	}
	_, params := enclosingParams(src, off)
	target := ""
	// args.NAME anywhere in the expression.
	hclsyntax.VisitAll(a.Expr, func(n hclsyntax.Node) hcl.Diagnostics {
		st, ok := n.(*hclsyntax.ScopeTraversalExpr)
		if !ok || !within(st.SrcRange, off) || st.Traversal.RootName() != "args" || len(st.Traversal) < 2 {
			return nil
		}
		if attr, ok := st.Traversal[1].(hcl.TraverseAttr); ok {
			target = attr.Name
		}
		return nil
	})
	// :NAME and {{NAME}} placeholders in a string (a SQL query).
	if target == "" {
		lineStart := strings.LastIndexByte(string(src[:off]), '\n') + 1
		lineEnd := len(src)
		if i := strings.IndexByte(string(src[off:]), '\n'); i >= 0 {
			lineEnd = off + i
		}
		for _, m := range rePlaceholder.FindAllSubmatchIndex(src[lineStart:lineEnd], -1) {
			if lineStart+m[0] <= off && off <= lineStart+m[1] {
				target = string(src[lineStart+m[2] : lineStart+m[3]])
			}
		}
	}
	if p, ok := params[target]; ok && target != "" {
		return location(name, p.LabelRanges[0], src)
	}
	return nil
}

func location(file string, r hcl.Range, src []byte) *protocol.Location {
	return &protocol.Location{URI: pathToURI(file), Range: toRange(r, src)}
}

// format is `mcpd fmt` of the buffer, as one edit of the whole text; a
// buffer that does not parse is left alone.
func (s *Server) format(name string) []protocol.TextEdit {
	src := s.readSource(name)
	if _, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
		return nil
	}
	out := hclwrite.Format(src)
	if string(out) == string(src) {
		return []protocol.TextEdit{}
	}
	end := toPosition(hcl.Pos{Line: strings.Count(string(src), "\n") + 1, Byte: len(src)}, src)
	return []protocol.TextEdit{{Range: protocol.Range{End: end}, NewText: string(out)}}
}
