package adapter

import (
	"fmt"
	"math"
	"math/big"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/mcpd/mcpd/engine/hclbody"

	"github.com/mcpd/mcpd/engine/suggest"
)

// The load-time toolkit: what every adapter's CompileTool and DecodeBackend
// need to decode its block, so that each one is about its own job and the
// same mistake gets the same diagnostic in every adapter. A block's schema
// is declared once, as a Schema value that the engine (and a language
// server) can read back (see Schemaer); a Decoder decodes a body against it
// and the attributes whose values must be known at load time, collecting
// every diagnostic with its range instead of stopping at the first.

// A Schema is the declared shape of one block: its attributes and its
// nested blocks, each with its own Schema. It is what Body.Content checks
// (see Body), and what an editor can offer for completion.
type Schema struct {
	Attributes []hcl.AttributeSchema
	Blocks     []BlockSchema
}

// BlockSchema is one nested block type of a Schema.
type BlockSchema struct {
	Type       string
	LabelNames []string
	Schema     *Schema
}

// Body is the schema as hcl.Body.Content takes it: the nested blocks by
// their header only.
func (s *Schema) Body() *hcl.BodySchema {
	out := &hcl.BodySchema{Attributes: s.Attributes}
	for _, b := range s.Blocks {
		out.Blocks = append(out.Blocks, hcl.BlockHeaderSchema{Type: b.Type, LabelNames: b.LabelNames})
	}
	return out
}

// Block returns the schema of the nested block type typ, or nil.
func (s *Schema) Block(typ string) *Schema {
	for _, b := range s.Blocks {
		if b.Type == typ {
			return b.Schema
		}
	}
	return nil
}

// A Schemaer is an Adapter that declares the schema of its tool-level
// block, so that tools outside the adapter (an editor's completion, docs)
// can read it. A BackendAdapter that is one also declares its backend
// block's schema.
type Schemaer interface {
	ToolSchema() *Schema
}

// A BackendSchemaer is a BackendAdapter that declares the schema of its
// backend block.
type BackendSchemaer interface {
	BackendSchema() *Schema
}

// A Decoder decodes one block and collects the diagnostics of doing so.
// The zero value is not usable: Scope must be set.
type Decoder struct {
	Scope *Scope
	Diags hcl.Diagnostics
}

// NewDecoder returns a Decoder for the expressions of a block with scope.
func NewDecoder(scope *Scope) *Decoder { return &Decoder{Scope: scope} }

// Add collects diags and reports whether they hold no error.
func (d *Decoder) Add(diags hcl.Diagnostics) bool {
	d.Diags = append(d.Diags, diags...)
	return !diags.HasErrors()
}

// HasErrors reports whether an error was collected.
func (d *Decoder) HasErrors() bool { return d.Diags.HasErrors() }

// Errorf collects an error at rng.
func (d *Decoder) Errorf(rng hcl.Range, summary, format string, args ...any) {
	d.Diags = append(d.Diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng.Ptr()})
}

// Warnf collects a warning at rng.
func (d *Decoder) Warnf(rng hcl.Range, summary, format string, args ...any) {
	d.Diags = append(d.Diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng.Ptr()})
}

// Content decodes body against s: an attribute or block that s does not
// declare, or a missing required attribute, is a diagnostic with its range.
// ok is false when it reported an error; content may then be partial (or
// nil), for callers that go on to report more.
func (d *Decoder) Content(body hcl.Body, s *Schema) (content *hcl.BodyContent, ok bool) {
	content, diags := hclbody.Content(body, s.Body())
	return content, d.Add(diags)
}

// AttrError is an error about an attribute's value, at its expression.
func AttrError(attr *hcl.Attribute, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: attr.Expr.Range().Ptr()}
}

// SingleBlock returns the only block of type typ, reporting the others.
func (d *Decoder) SingleBlock(blocks hcl.Blocks, typ string) *hcl.Block {
	var found *hcl.Block
	for _, b := range blocks.OfType(typ) {
		if found != nil {
			d.Errorf(b.DefRange, "Duplicate "+typ+" block", "Only one %s block is allowed here; the first is at %s.", typ, found.DefRange)
			continue
		}
		found = b
	}
	return found
}

// name is what messages call an attribute: what, or its name.
func name(attr *hcl.Attribute, what string) string {
	if what != "" {
		return what
	}
	return attr.Name
}

// Value evaluates an attribute whose value must be known at load time: it
// may call the file's functions (env, file) and may not refer to the
// call's arguments. The value may be null. Messages call the attribute
// what ("" for its name) and never show its value, which may be a secret.
func (d *Decoder) Value(attr *hcl.Attribute, what string) (cty.Value, bool) {
	return d.ExprValue(attr.Expr, name(attr, what))
}

// ExprValue is Value for an expression that is not a whole attribute (an
// element of a list, the key of an object).
func (d *Decoder) ExprValue(expr hcl.Expression, what string) (cty.Value, bool) {
	if !d.Add(d.Scope.CheckStatic(expr, what)) {
		return cty.NilVal, false
	}
	v, diags := expr.Value(d.Scope.EvalContext())
	if !d.Add(diags) {
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		// An unset environment variable, in a load that allows it: the
		// subject contains the env() call, so the loader reports the
		// variable instead of this.
		d.Errorf(expr.Range(), "Value must be known at load time", "%s must be known at load time.", what)
		return cty.NilVal, false
	}
	v, _ = v.UnmarkDeep()
	return v, true
}

// Static is Value converted to want; null is an error.
func (d *Decoder) Static(attr *hcl.Attribute, what string, want cty.Type) (cty.Value, bool) {
	return d.StaticExpr(attr.Expr, name(attr, what), want)
}

// StaticExpr is Static for an expression that is not a whole attribute.
func (d *Decoder) StaticExpr(expr hcl.Expression, what string, want cty.Type) (cty.Value, bool) {
	v, ok := d.ExprValue(expr, what)
	if !ok {
		return cty.NilVal, false
	}
	if v.IsNull() {
		d.Errorf(expr.Range(), "Missing value", "%s must not be null.", what)
		return cty.NilVal, false
	}
	cv, err := convert.Convert(v, want)
	if err != nil {
		d.Errorf(expr.Range(), "Incorrect attribute value type", "%s must be a %s, got %s.", what, want.FriendlyName(), v.Type().FriendlyName())
		return cty.NilVal, false
	}
	return cv, true
}

// String decodes a load-time string.
func (d *Decoder) String(attr *hcl.Attribute, what string) (string, bool) {
	v, ok := d.Static(attr, what, cty.String)
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

// Bool decodes a load-time bool.
func (d *Decoder) Bool(attr *hcl.Attribute, what string) (bool, bool) {
	v, ok := d.Static(attr, what, cty.Bool)
	if !ok {
		return false, false
	}
	return v.True(), true
}

// Int decodes a load-time whole number in [lo, hi]; hi = math.MaxInt64 for
// no upper bound.
func (d *Decoder) Int(attr *hcl.Attribute, what string, lo, hi int64) (int64, bool) {
	v, ok := d.Static(attr, what, cty.Number)
	if !ok {
		return 0, false
	}
	n, diags := IntValue(v, attr.Expr.Range(), name(attr, what), lo, hi)
	return n, d.Add(diags)
}

// Duration decodes a load-time duration string ("10s", "1m30s", "250ms")
// in [lo, hi]; hi = 0 for no upper bound.
func (d *Decoder) Duration(attr *hcl.Attribute, what string, lo, hi time.Duration) (time.Duration, bool) {
	v, ok := d.Value(attr, what)
	if !ok {
		return 0, false
	}
	dur, diags := DurationValue(v, attr.Expr.Range(), name(attr, what), lo, hi)
	return dur, d.Add(diags)
}

// IntValue checks that v is a whole number in [lo, hi] (hi = math.MaxInt64
// for no upper bound). Its messages are those of Decoder.Int, for values
// that are not a whole attribute (a list's elements) or that are
// evaluated elsewhere.
func IntValue(v cty.Value, rng hcl.Range, what string, lo, hi int64) (int64, hcl.Diagnostics) {
	want := fmt.Sprintf("a whole number from %d to %d", lo, hi)
	if hi == math.MaxInt64 {
		want = fmt.Sprintf("a whole number of at least %d", lo)
	}
	got := "null"
	if !v.IsNull() && v.IsKnown() {
		if v.Type() == cty.Number {
			bf := v.AsBigFloat()
			if n, acc := bf.Int64(); bf.IsInt() && acc == big.Exact && n >= lo && n <= hi {
				return n, nil
			}
			got = bf.Text('g', -1)
		} else {
			got = v.Type().FriendlyName()
		}
	}
	return 0, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid number", Detail: fmt.Sprintf("%s must be %s, got %s.", what, want, got), Subject: rng.Ptr()}}
}

// WholeNumber returns v as an int64 when it is a number that is a whole
// int64.
func WholeNumber(v cty.Value) (int64, bool) {
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		return 0, false
	}
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	return n, bf.IsInt() && acc == big.Exact
}

// DurationValue checks that v is a duration string in [lo, hi] (hi = 0 for
// no upper bound), with the messages of Decoder.Duration.
func DurationValue(v cty.Value, rng hcl.Range, what string, lo, hi time.Duration) (time.Duration, hcl.Diagnostics) {
	bad := func(format string, args ...any) (time.Duration, hcl.Diagnostics) {
		return 0, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid duration", Detail: fmt.Sprintf(format, args...), Subject: rng.Ptr()}}
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		got := "null"
		if !v.IsNull() && v.IsKnown() {
			got = v.Type().FriendlyName()
		}
		return bad(`%s must be a duration string such as "10s", "1m30s" or "250ms", got %s.`, what, got)
	}
	s := v.AsString()
	dur, err := time.ParseDuration(s)
	if err != nil {
		return bad(`%s: %q is not a duration; use a value such as "10s", "1m30s" or "250ms".`, what, s)
	}
	switch {
	case hi > 0 && (dur < lo || dur > hi):
		return bad("%s must be between %s and %s, got %s.", what, lo, hi, dur)
	case hi == 0 && dur < lo && lo > 0:
		return bad("%s must be positive, got %s.", what, s)
	case hi == 0 && dur < lo:
		return bad("%s must be positive or zero, got %s.", what, s)
	}
	return dur, nil
}

// LookupBackend finds the backend that a tool's attribute names: a
// top-level block of blockType, opened by the adapter that owns it as a T.
// An unknown name is answered with the closest declared one, else with
// declare, an example of the block to add (with %q for the name).
func LookupBackend[T Backend](d *Decoder, b *ToolBlock, attr *hcl.Attribute, blockType, declare string) (T, bool) {
	var zero T
	name, ok := d.String(attr, "")
	if !ok {
		return zero, false
	}
	var found Backend
	var exists bool
	if b.Backend != nil {
		found, exists = b.Backend(blockType, name)
	}
	if !exists {
		if dym := b.BackendSuggestion(blockType, name); dym != "" {
			d.Errorf(attr.Expr.Range(), "Unknown "+blockType, "There is no %s named %q.%s", blockType, name, dym)
		} else {
			d.Errorf(attr.Expr.Range(), "Unknown "+blockType, "There is no %s named %q; declare it at the top level: %s.", blockType, name, fmt.Sprintf(declare, name))
		}
		return zero, false
	}
	be, ok := found.(T)
	if !ok {
		d.Errorf(attr.Expr.Range(), "Unknown "+blockType, "The %s %q is not a backend of the %s adapter.", blockType, name, b.Type)
		return zero, false
	}
	return be, true
}

// BackendSuggestion is ` Did you mean "x"?` when a backend of blockType that
// the config declares has a name close to name, else "".
func (b *ToolBlock) BackendSuggestion(blockType, name string) string {
	if b.BackendNames == nil {
		return ""
	}
	return suggest.DidYouMean(name, b.BackendNames(blockType))
}

// DiagError turns call-time diagnostics into one error without source
// snippets: the model sees what went wrong, not the config file.
func DiagError(diags hcl.Diagnostics) error { return diagError(diags) }

// TrimPartialRune drops an incomplete UTF-8 sequence at the end of b, left
// there by cutting a stream or a body at a byte limit.
func TrimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
