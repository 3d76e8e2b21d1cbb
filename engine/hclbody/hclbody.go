// Package hclbody takes the content of a config body by its schema, as
// hcl.Body's Content and PartialContent do, but with mcpd's own diagnostics,
// built where each problem is found:
//
//   - an argument or block the schema does not know is "Unsupported argument"
//     or "Unsupported block type" at its name, with a did-you-mean among
//     every name valid in that body (suggest.Closest), including the names
//     that another decoder takes from the same body (a tool's adapter block,
//     the top level's backend blocks);
//   - a required argument that is absent is "Missing required argument" at
//     the body's opening brace, unless the body holds a misspelling of it:
//     `comand = [...]` is one mistake, reported once, as the misspelling.
//
// HCL's own Content reports both, but suggests only among the schema it is
// given and cannot know that a missing argument is misspelt nearby; mending
// its messages afterwards meant matching their English text, which changes
// with HCL. Label errors (a missing or extraneous block label) are still
// HCL's: they are built where HCL finds them and need no repair.
package hclbody

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/suggest"
)

// Content is body.Content(schema) with the diagnostics described in the
// package comment.
func Content(body hcl.Body, schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	content, _, diags := PartialContent(body, schema, nil)
	return content, diags
}

// PartialContent takes what schema describes from body and checks that
// everything else in it is described by rest, the part of the body's schema
// that is decoded later from the returned remaining body (by
// remain.PartialContent(rest)): anything neither describes is an unsupported
// argument or block. A nil rest leaves nothing to anyone else, as Content.
//
// The remaining body keeps what rest describes. Only native-syntax bodies
// (what hclsyntax parses, and their blocks' bodies) are checked this way;
// any other body is left to HCL's own Content.
func PartialContent(body hcl.Body, schema, rest *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		if rest == nil {
			c, d := body.Content(schema)
			return c, hcl.EmptyBody(), d
		}
		return body.PartialContent(schema)
	}
	// Take the content without HCL's missing-argument errors: they are
	// built below, knowing the misspellings.
	content, remain, diags := sb.PartialContent(withoutRequired(schema))

	// Most bodies hold nothing unknown: find out without allocating.
	var attrs []*hclsyntax.Attribute
	for name, a := range sb.Attributes {
		if content.Attributes[name] == nil && !hasAttr(rest, name) && visibleAttr(remain, name) {
			attrs = append(attrs, a)
		}
	}
	var blocks []*hclsyntax.Block
	var hidden map[string]bool
	for _, b := range sb.Blocks {
		if hasBlock(schema, b.Type) || hasBlock(rest, b.Type) {
			continue
		}
		if hidden == nil {
			hidden = map[string]bool{}
		}
		h, seen := hidden[b.Type]
		if !seen {
			h = !visibleBlock(remain, b.Type)
			hidden[b.Type] = h
		}
		if !h {
			blocks = append(blocks, b)
		}
	}

	var misspelt []string
	if len(attrs)+len(blocks) > 0 {
		d, m := unsupported(attrs, blocks, content, schema, rest)
		diags, misspelt = append(diags, d...), m
	}
	for _, a := range schema.Attributes {
		if !a.Required || content.Attributes[a.Name] != nil || slices.Contains(misspelt, a.Name) {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing required argument",
			Detail:   fmt.Sprintf("The argument %q is required, but no definition was found.", a.Name),
			Subject:  sb.MissingItemRange().Ptr(),
		})
	}
	return content, remain, diags
}

// unsupported builds the errors for the arguments and blocks that neither
// schema nor rest describes, in source order, and returns the names the
// misspelt arguments were meant to be.
func unsupported(attrs []*hclsyntax.Attribute, blocks []*hclsyntax.Block, content *hcl.BodyContent, schema, rest *hcl.BodySchema) (hcl.Diagnostics, []string) {
	// Attribute suggestions leave out what the body already sets: a second
	// `description` is not what `descriptoin` was meant to be. Names come
	// in schema order: of two equally close, the earlier is suggested.
	var attrNames, setAttrNames, blockNames []string
	for _, s := range []*hcl.BodySchema{schema, rest} {
		if s == nil {
			continue
		}
		for _, a := range s.Attributes {
			if s == schema && content.Attributes[a.Name] != nil {
				setAttrNames = append(setAttrNames, a.Name)
				continue
			}
			attrNames = append(attrNames, a.Name)
		}
		for _, b := range s.Blocks {
			blockNames = append(blockNames, b.Type)
		}
	}
	slices.SortFunc(attrs, func(a, b *hclsyntax.Attribute) int {
		return cmp.Compare(a.NameRange.Start.Byte, b.NameRange.Start.Byte)
	})

	var diags hcl.Diagnostics
	var misspelt []string
	for _, a := range attrs {
		hint := ""
		if s := suggest.Closest(a.Name, attrNames); s != "" {
			hint = fmt.Sprintf(" Did you mean %q?", s)
			misspelt = append(misspelt, s)
		} else if s := sameOrClosest(a.Name, blockNames); s != "" {
			hint = fmt.Sprintf(" Did you mean to define a block of type %q?", s)
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unsupported argument",
			Detail:   fmt.Sprintf("An argument named %q is not expected here.%s", a.Name, hint),
			Subject:  a.NameRange.Ptr(),
		})
	}
	allAttrNames := append(setAttrNames, attrNames...)
	for _, b := range blocks {
		hint := ""
		if s := suggest.Closest(b.Type, blockNames); s != "" {
			hint = fmt.Sprintf(" Did you mean %q?", s)
		} else if s := sameOrClosest(b.Type, allAttrNames); s != "" {
			hint = fmt.Sprintf(" Did you mean to define argument %q? If so, use the equals sign to assign it a value.", s)
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unsupported block type",
			Detail:   fmt.Sprintf("Blocks of type %q are not expected here.%s", b.Type, hint),
			Subject:  b.TypeRange.Ptr(),
		})
	}
	return diags, misspelt
}

// withoutRequired is schema with every attribute optional (schema itself
// when none is required, which is most).
func withoutRequired(schema *hcl.BodySchema) *hcl.BodySchema {
	if !slices.ContainsFunc(schema.Attributes, func(a hcl.AttributeSchema) bool { return a.Required }) {
		return schema
	}
	out := &hcl.BodySchema{Blocks: schema.Blocks, Attributes: make([]hcl.AttributeSchema, len(schema.Attributes))}
	for i, a := range schema.Attributes {
		out.Attributes[i] = hcl.AttributeSchema{Name: a.Name}
	}
	return out
}

func hasAttr(s *hcl.BodySchema, name string) bool {
	return s != nil && slices.ContainsFunc(s.Attributes, func(a hcl.AttributeSchema) bool { return a.Name == name })
}

func hasBlock(s *hcl.BodySchema, typ string) bool {
	return s != nil && slices.ContainsFunc(s.Blocks, func(b hcl.BlockHeaderSchema) bool { return b.Type == typ })
}

// sameOrClosest is name itself when candidates hold it, else the closest
// candidate: the other kind of item with the name, for "did you mean to
// define a block (an argument)".
func sameOrClosest(name string, candidates []string) string {
	if slices.Contains(candidates, name) {
		return name
	}
	return suggest.Closest(name, candidates)
}

// visibleAttr and visibleBlock tell whether remain still holds an item: a
// body that is itself what is left of another (a PartialContent's remain)
// hides what was taken from it before, and that is not unsupported. HCL
// keeps the hidden set to itself; asking for the item is how to see it.
func visibleAttr(remain hcl.Body, name string) bool {
	c, _, _ := remain.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: name}}})
	return c != nil && c.Attributes[name] != nil
}

// visibleBlock: a block of a type that is not hidden comes back, or (when
// its labels are not the ones asked for) a label error does; a hidden type
// gives neither.
func visibleBlock(remain hcl.Body, typ string) bool {
	c, _, d := remain.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: typ}}})
	return (c != nil && len(c.Blocks) > 0) || len(d) > 0
}
