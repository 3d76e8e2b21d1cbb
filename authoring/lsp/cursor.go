package lsp

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// A frame is one open brace around the cursor: a block (typ and labels)
// or an object expression.
type frame struct {
	block  bool
	typ    string
	labels []string
}

// cursor is what the text before a position says about it. It is read
// from the token stream, not the syntax tree: the text the author is in
// the middle of typing seldom parses, and the lexer never gives up.
type cursor struct {
	frames []frame
	prefix string // the line up to the cursor
}

// blocks are the block types around the cursor, outermost first, or nil
// inside an object expression (where no attribute names are offered).
func (c cursor) blocks() ([]string, bool) {
	var out []string
	for _, f := range c.frames {
		if !f.block {
			return nil, false
		}
		out = append(out, f.typ)
	}
	return out, true
}

func cursorAt(src []byte, off int) cursor {
	toks, _ := hclsyntax.LexConfig(src, "", hcl.InitialPos)
	var c cursor
	lineStart := 0 // index of the first token of the current line
	for i, t := range toks {
		if t.Range.Start.Byte >= off {
			break
		}
		switch t.Type {
		case hclsyntax.TokenNewline:
			lineStart = i + 1
		case hclsyntax.TokenOBrace:
			c.frames = append(c.frames, header(toks[lineStart:i]))
			lineStart = i + 1
		case hclsyntax.TokenCBrace:
			if len(c.frames) > 0 {
				c.frames = c.frames[:len(c.frames)-1]
			}
		}
	}
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	c.prefix = string(src[start:off])
	return c
}

// header reads a block header (`type "label" ... {`) from the tokens
// before a brace; anything else opens an object.
func header(toks hclsyntax.Tokens) frame {
	if len(toks) == 0 || toks[0].Type != hclsyntax.TokenIdent {
		return frame{}
	}
	f := frame{block: true, typ: string(toks[0].Bytes)}
	for _, t := range toks[1:] {
		switch t.Type {
		case hclsyntax.TokenOQuote, hclsyntax.TokenCQuote:
		case hclsyntax.TokenQuotedLit:
			f.labels = append(f.labels, string(t.Bytes))
		case hclsyntax.TokenIdent:
			f.labels = append(f.labels, string(t.Bytes))
		default:
			return frame{}
		}
	}
	return f
}

// schemaAt walks the schema along the block path; key is the reference
// key of the innermost block: the path, from the adapter's own block on
// when it is inside one.
func (s *Server) schemaAt(path []string) (sc *blockSchema, key string) {
	sc = s.root
	start := 0
	for i, typ := range path {
		next := sc.blocks[typ]
		if next == nil {
			return nil, ""
		}
		if next.adapter != "" && sc.adapter == "" {
			start = i
		}
		sc = next
	}
	key = ""
	for _, p := range path[start:] {
		if key != "" {
			key += "."
		}
		key += p
	}
	return sc, key
}

// syntaxBlock finds the innermost block of body containing pos, with the
// path of blocks to it.
func syntaxBlocks(body *hclsyntax.Body, pos int) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for body != nil {
		var found *hclsyntax.Block
		for _, b := range body.Blocks {
			if b.Range().Start.Byte <= pos && pos < b.Range().End.Byte {
				found = b
				break
			}
		}
		if found == nil {
			break
		}
		out = append(out, found)
		body = found.Body
	}
	return out
}

// attributeAt is the attribute of the innermost block around pos whose
// range contains pos.
func attributeAt(blocks []*hclsyntax.Block, root *hclsyntax.Body, pos int) *hclsyntax.Attribute {
	body := root
	if len(blocks) > 0 {
		body = blocks[len(blocks)-1].Body
	}
	for _, a := range body.Attributes {
		if a.SrcRange.Start.Byte <= pos && pos <= a.SrcRange.End.Byte {
			return a
		}
	}
	return nil
}

func within(r hcl.Range, pos int) bool { return r.Start.Byte <= pos && pos <= r.End.Byte }
