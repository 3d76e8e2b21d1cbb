package lsp

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

var (
	reDidYouMean = regexp.MustCompile(`Did you mean "([^"]+)"\?`)
	reWord       = regexp.MustCompile(`^"?[A-Za-z0-9_.-]+"?$`)
)

// codeActions are the did-you-mean fixes of the last load's diagnostics
// in rng: each replaces the diagnostic's subject (a name, or a quoted
// name) with the suggestion. They are offered only while the buffer is the
// text that load read, so that a stale range never edits the wrong text.
func (s *Server) codeActions(name string, rng protocol.Range) []protocol.CodeAction {
	src := s.readSource(name)
	s.mu.Lock()
	res := s.results[filepath.Dir(name)]
	s.mu.Unlock()
	out := []protocol.CodeAction{}
	if res == nil || !bytes.Equal(res.sources[name], src) {
		return out
	}
	lo, hi := offset(src, rng.Start), offset(src, rng.End)
	for _, d := range res.diags {
		if d.Subject == nil || d.Subject.Filename != name || d.Subject.End.Byte < lo || d.Subject.Start.Byte > hi || d.Subject.End.Byte > len(src) {
			continue
		}
		m := reDidYouMean.FindStringSubmatch(d.Detail)
		if m == nil {
			continue
		}
		old := src[d.Subject.Start.Byte:d.Subject.End.Byte]
		if !reWord.Match(old) {
			continue
		}
		repl := m[1]
		if old[0] == '"' {
			repl = fmt.Sprintf("%q", m[1])
		}
		kind := protocol.CodeActionKindQuickFix
		preferred := true
		out = append(out, protocol.CodeAction{
			Title:       fmt.Sprintf("Change to %s", repl),
			Kind:        &kind,
			Diagnostics: []protocol.Diagnostic{toDiagnostic(d, src)},
			IsPreferred: &preferred,
			Edit: &protocol.WorkspaceEdit{Changes: map[protocol.DocumentUri][]protocol.TextEdit{
				pathToURI(name): {{Range: toRange(*d.Subject, src), NewText: repl}},
			}},
		})
	}
	return out
}

// references finds the uses of what the cursor is on: a backend (its
// block's label, or a tool's attribute naming it) in every file of the
// directory, or a param (its label, args.NAME, or a :NAME or {{NAME}}
// placeholder) in its tool.
func (s *Server) references(name string, pos protocol.Position, withDecl bool) []protocol.Location {
	out := []protocol.Location{}
	src, off, body, blocks := s.parseAt(name, pos)
	if body == nil {
		return out
	}
	dir := filepath.Dir(name)

	// A backend: its declaration, or a use.
	typ, backend := "", ""
	if len(blocks) == 1 && len(blocks[0].Labels) > 0 && within(blocks[0].LabelRanges[0], off) && s.isBackendBlock(blocks[0].Type) {
		typ, backend = blocks[0].Type, blocks[0].Labels[0]
	} else if a := attributeAt(blocks, body, off); a != nil && within(a.Expr.Range(), off) {
		sc, _ := s.schemaAt(blockPath(blocks))
		if t := s.backendRef(sc, a.Name); t != "" {
			if v, ok := stringValue(a.Expr); ok {
				typ, backend = t, v
			}
		}
	}
	if typ != "" {
		decls := s.declarations(dir)
		if d, ok := decls[typ][backend]; ok && withDecl {
			out = append(out, *location(d.file, d.block.LabelRanges[0], d.src))
		}
		files := map[string][]byte{}
		for _, byName := range decls {
			for _, d := range byName {
				files[d.file] = d.src
			}
		}
		for _, file := range sortedNames(files) {
			fsrc := files[file]
			ff, _ := hclsyntax.ParseConfig(fsrc, file, hcl.InitialPos)
			fb, ok := ff.Body.(*hclsyntax.Body)
			if !ok {
				continue
			}
			walkAttrs(fb, nil, func(path []string, a *hclsyntax.Attribute) {
				sc, _ := s.schemaAt(path)
				if s.backendRef(sc, a.Name) != typ {
					return
				}
				if v, ok := stringValue(a.Expr); ok && v == backend {
					out = append(out, *location(file, a.Expr.Range(), fsrc))
				}
			})
		}
		return out
	}

	// A param of the tool around the cursor.
	if len(blocks) == 0 {
		return out
	}
	tool := blocks[0]
	param := ""
	if inner := blocks[len(blocks)-1]; inner.Type == "param" && len(inner.Labels) > 0 && within(inner.LabelRanges[0], off) {
		param = inner.Labels[0]
	} else if a := attributeAt(blocks, body, off); a != nil {
		if loc := s.definition(name, pos); loc != nil && loc.URI == pathToURI(name) {
			for _, b := range tool.Body.Blocks {
				if b.Type == "param" && len(b.Labels) > 0 && toRange(b.LabelRanges[0], src).Start == loc.Range.Start {
					param = b.Labels[0]
				}
			}
		}
	}
	if param == "" {
		return out
	}
	for _, b := range tool.Body.Blocks {
		if b.Type == "param" && len(b.Labels) > 0 && b.Labels[0] == param && withDecl {
			out = append(out, *location(name, b.LabelRanges[0], src))
		}
	}
	walkAttrs(tool.Body, []string{tool.Type}, func(path []string, a *hclsyntax.Attribute) {
		hclsyntax.VisitAll(a.Expr, func(n hclsyntax.Node) hcl.Diagnostics {
			st, ok := n.(*hclsyntax.ScopeTraversalExpr)
			if ok && st.Traversal.RootName() == "args" && len(st.Traversal) > 1 {
				if at, ok := st.Traversal[1].(hcl.TraverseAttr); ok && at.Name == param {
					out = append(out, *location(name, st.SrcRange, src))
				}
			}
			return nil
		})
		r := a.Expr.Range()
		if r.End.Byte > len(src) {
			return
		}
		for _, m := range rePlaceholder.FindAllSubmatchIndex(src[r.Start.Byte:r.End.Byte], -1) {
			if string(src[r.Start.Byte+m[2]:r.Start.Byte+m[3]]) == param {
				start, end := r.Start.Byte+m[2], r.Start.Byte+m[3]
				out = append(out, protocol.Location{URI: pathToURI(name), Range: protocol.Range{
					Start: toPosition(posAt(src, start), src), End: toPosition(posAt(src, end), src)}})
			}
		}
	})
	return out
}

func (s *Server) isBackendBlock(typ string) bool {
	_, ok := s.reg.BackendAdapter(typ)
	return ok
}

func blockPath(blocks []*hclsyntax.Block) []string {
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = b.Type
	}
	return out
}

func stringValue(expr hclsyntax.Expression) (string, bool) {
	v, diags := expr.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type().FriendlyName() != "string" {
		return "", false
	}
	return v.AsString(), true
}

// walkAttrs calls f with every attribute of body and its nested blocks,
// and the block path to it.
func walkAttrs(body *hclsyntax.Body, path []string, f func([]string, *hclsyntax.Attribute)) {
	for _, a := range body.Attributes {
		f(path, a)
	}
	for _, b := range body.Blocks {
		walkAttrs(b.Body, append(append([]string{}, path...), b.Type), f)
	}
}

// posAt is the HCL position of byte offset off of src.
func posAt(src []byte, off int) hcl.Pos {
	line := bytes.Count(src[:off], []byte("\n")) + 1
	return hcl.Pos{Line: line, Column: off - (bytes.LastIndexByte(src[:off], '\n') + 1) + 1, Byte: off}
}
