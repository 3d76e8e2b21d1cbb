package importer

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// The importers write HCL with hclwrite, so that quoting and escaping
// (including "${" in a description, which HCL would read as a template) is
// HCL's own. These helpers build the few expressions mcpd configs need
// beyond literal values: args.NAME, env("NAME"), string templates and
// objects whose values are expressions.

// Value converts a JSON-like Go value (what encoding/json or a YAML decoder
// produces: maps, slices, strings, float64, json.Number, ints, bools, nil)
// to a cty value for hclwrite. Object keys are kept as written; hclwrite
// quotes those that are not identifiers.
func Value(v any) cty.Value {
	switch x := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType)
	case string:
		return cty.StringVal(x)
	case bool:
		return cty.BoolVal(x)
	case float64:
		return cty.NumberFloatVal(x)
	case float32:
		return cty.NumberFloatVal(float64(x))
	case int:
		return cty.NumberIntVal(int64(x))
	case int64:
		return cty.NumberIntVal(x)
	case uint64:
		return cty.NumberUIntVal(x)
	case json.Number:
		if f, ok := new(big.Float).SetString(string(x)); ok {
			return cty.NumberVal(f)
		}
		return cty.StringVal(string(x))
	case []any:
		if len(x) == 0 {
			return cty.EmptyTupleVal
		}
		vals := make([]cty.Value, len(x))
		for i, e := range x {
			vals[i] = Value(e)
		}
		return cty.TupleVal(vals)
	case []string:
		if len(x) == 0 {
			return cty.EmptyTupleVal
		}
		vals := make([]cty.Value, len(x))
		for i, e := range x {
			vals[i] = cty.StringVal(e)
		}
		return cty.TupleVal(vals)
	case map[string]any:
		if len(x) == 0 {
			return cty.EmptyObjectVal
		}
		vals := make(map[string]cty.Value, len(x))
		for k, e := range x {
			vals[k] = Value(e)
		}
		return cty.ObjectVal(vals)
	default:
		// Anything else is first brought to JSON's shapes.
		b, err := json.Marshal(x)
		if err != nil {
			return cty.NullVal(cty.DynamicPseudoType)
		}
		var y any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if d.Decode(&y) != nil {
			return cty.NullVal(cty.DynamicPseudoType)
		}
		return Value(y)
	}
}

// Args is the expression args.NAME.
func Args(name string) hclwrite.Tokens {
	return hclwrite.TokensForTraversal(hcl.Traversal{hcl.TraverseRoot{Name: "args"}, hcl.TraverseAttr{Name: name}})
}

// Call is the expression NAME(ARGS...).
func Call(name string, args ...hclwrite.Tokens) hclwrite.Tokens {
	return hclwrite.TokensForFunctionCall(name, args...)
}

// Env is the expression env("NAME").
func Env(name string) hclwrite.Tokens {
	return Call("env", Lit(name))
}

// Lit is a literal value as tokens.
func Lit(v any) hclwrite.Tokens { return hclwrite.TokensForValue(Value(v)) }

// Part is one piece of a string template: literal text, or an expression
// interpolated with ${...}.
type Part struct {
	Text string
	Expr hclwrite.Tokens
}

// Template builds a quoted string template of parts: "text${expr}text".
func Template(parts ...Part) hclwrite.Tokens {
	toks := hclwrite.Tokens{{Type: hclsyntax.TokenOQuote, Bytes: []byte(`"`)}}
	for _, p := range parts {
		if p.Expr != nil {
			toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenTemplateInterp, Bytes: []byte("${")})
			toks = append(toks, p.Expr...)
			toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenTemplateSeqEnd, Bytes: []byte("}")})
			continue
		}
		if p.Text == "" {
			continue
		}
		// A quoted literal as hclwrite escapes it, without its quotes.
		q := hclwrite.TokensForValue(cty.StringVal(p.Text))
		toks = append(toks, q[1:len(q)-1]...)
	}
	return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCQuote, Bytes: []byte(`"`)})
}

// Field is one entry of an object whose values are expressions.
type Field struct {
	Name  string
	Value hclwrite.Tokens
}

// Object builds { name = value, ... } in the order given; names that are
// not identifiers are quoted.
func Object(fields []Field) hclwrite.Tokens {
	attrs := make([]hclwrite.ObjectAttrTokens, len(fields))
	for i, f := range fields {
		attrs[i] = hclwrite.ObjectAttrTokens{Name: Key(f.Name), Value: f.Value}
	}
	return hclwrite.TokensForObject(attrs)
}

// SortFields orders fields by name, for stable output.
func SortFields(fields []Field) {
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].Name < fields[j].Name })
}

// Key is an object key: a bare identifier when it is one, else a quoted
// string.
func Key(name string) hclwrite.Tokens {
	if hclsyntax.ValidIdentifier(name) {
		return hclwrite.TokensForIdentifier(name)
	}
	return hclwrite.TokensForValue(cty.StringVal(name))
}

// Format returns the file's bytes in canonical form (what mcpd fmt
// writes).
func Format(f *hclwrite.File) []byte {
	return hclwrite.Format(f.Bytes())
}

// keyOrder puts the JSON Schema keywords a reader looks for first at the
// top of an object; other keys follow in alphabetical order.
var keyOrder = map[string]int{"type": 1, "title": 2, "description": 3, "format": 4, "enum": 5, "const": 6, "default": 7}

// Tokens is Value as tokens, with object keys in a reader's order (type,
// description, format, enum, default, then the rest alphabetically)
// rather than cty's alphabetical one. Large schemas are common (an API's
// response objects nest other objects many levels deep), so the tokens
// are appended to one slice rather than built level by level.
func Tokens(v any) hclwrite.Tokens {
	return appendTokens(nil, v)
}

func appendTokens(dst hclwrite.Tokens, v any) hclwrite.Tokens {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return append(dst, hclwrite.TokensForValue(cty.EmptyObjectVal)...)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			oi, oj := keyOrder[keys[i]], keyOrder[keys[j]]
			if oi == 0 {
				oi = 100
			}
			if oj == 0 {
				oj = 100
			}
			if oi != oj {
				return oi < oj
			}
			return keys[i] < keys[j]
		})
		dst = append(dst, &hclwrite.Token{Type: hclsyntax.TokenOBrace, Bytes: []byte("{")}, newline())
		for _, k := range keys {
			dst = append(dst, Key(k)...)
			dst = append(dst, &hclwrite.Token{Type: hclsyntax.TokenEqual, Bytes: []byte("=")})
			dst = appendTokens(dst, x[k])
			dst = append(dst, newline())
		}
		return append(dst, &hclwrite.Token{Type: hclsyntax.TokenCBrace, Bytes: []byte("}")})
	case []any:
		dst = append(dst, &hclwrite.Token{Type: hclsyntax.TokenOBrack, Bytes: []byte("[")})
		for i, e := range x {
			if i > 0 {
				dst = append(dst, &hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")})
			}
			dst = appendTokens(dst, e)
		}
		return append(dst, &hclwrite.Token{Type: hclsyntax.TokenCBrack, Bytes: []byte("]")})
	}
	return append(dst, hclwrite.TokensForValue(Value(v))...)
}

func newline() *hclwrite.Token {
	return &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")}
}
