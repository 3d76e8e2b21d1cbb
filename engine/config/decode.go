package config

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/hclbody"
)

// decodeChecked decodes body into the struct dst points to, with the struct
// tags of gohcl.DecodeBody. The schema and the field tags of each struct
// type are worked out once (see planFor) instead of for every block: gohcl
// recomputes both with reflection and fresh maps per block, which was half
// the time of loading a 1,000-tool config. Attribute values are still
// converted by gohcl.DecodeExpression.
//
// Its diagnostics about the shape of each body (unknown, misspelt and
// missing arguments and blocks) are hclbody's, built where the problem is
// found, instead of HCL's. A struct with a remain field leaves part of its
// body to another decoder (a tool's adapter block, the top level's backend
// blocks); rest gives, for each such struct type, the schema of that part,
// so that nothing else is left unreported and a misspelling is matched
// against every name valid in the body.
func decodeChecked(body hcl.Body, ectx *hcl.EvalContext, dst any, rest map[reflect.Type]*hcl.BodySchema) hcl.Diagnostics {
	return (&decoder{ectx: ectx, rest: rest}).start(body, dst)
}

// decoder is the context of one decodeChecked call.
type decoder struct {
	ectx *hcl.EvalContext
	rest map[reflect.Type]*hcl.BodySchema
}

func (d *decoder) start(body hcl.Body, dst any) hcl.Diagnostics {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("decodeChecked: target must be a pointer to a struct, not %T", dst))
	}
	return d.decode(planFor(v.Elem().Type()), body, v.Elem())
}

// plan is how to decode one struct type: its body schema and where each
// tagged field goes.
type plan struct {
	typ        reflect.Type
	schema     *hcl.BodySchema
	partial    bool // there is a remain field: the schema is not exhaustive
	attrs      []attrField
	blocks     []blockField
	labels     []labelField
	remain     int // field index, -1 for none
	defRange   int
	typeRange  int
	attrRanges []attrRangeField
}

type attrKind int

const (
	attrValue      attrKind = iota // converted with gohcl.DecodeExpression
	attrAttribute                  // *hcl.Attribute
	attrExpression                 // hcl.Expression
)

type attrField struct {
	name  string
	index int
	kind  attrKind
}

type blockField struct {
	typ        string
	index      int
	slice, ptr bool
	elem       reflect.Type // the block's struct type
	fieldType  reflect.Type
}

type labelField struct {
	name       string
	index      int
	rangeIndex int // -1 for none
}

// attrRangeField is an attr_range, attr_name_range or attr_value_range
// field.
type attrRangeField struct {
	attr  string
	index int
	which string
}

var (
	plans          sync.Map // reflect.Type → *plan
	attributeType  = reflect.TypeFor[*hcl.Attribute]()
	expressionType = reflect.TypeFor[hcl.Expression]()
	bodyType       = reflect.TypeFor[hcl.Body]()
	rangeType      = reflect.TypeFor[hcl.Range]()
)

// planFor returns the plan for struct type t, building it on first use.
// The schema comes from gohcl.ImpliedBodySchema itself, so that it is the
// one gohcl would use.
func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := &plan{typ: t, remain: -1, defRange: -1, typeRange: -1}
	p.schema, p.partial = gohcl.ImpliedBodySchema(reflect.New(t).Interface())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("hcl")
		if tag == "" {
			continue
		}
		name, kind, found := strings.Cut(tag, ",")
		if !found {
			kind = "attr"
		}
		switch kind {
		case "attr", "optional":
			af := attrField{name: name, index: i, kind: attrValue}
			switch {
			case attributeType.AssignableTo(f.Type):
				af.kind = attrAttribute
			case expressionType.AssignableTo(f.Type):
				af.kind = attrExpression
			}
			p.attrs = append(p.attrs, af)
		case "block":
			bf := blockField{typ: name, index: i, fieldType: f.Type}
			ty := f.Type
			if ty.Kind() == reflect.Slice {
				bf.slice, ty = true, ty.Elem()
			}
			if ty.Kind() == reflect.Pointer {
				bf.ptr, ty = true, ty.Elem()
			}
			bf.elem = ty
			p.blocks = append(p.blocks, bf)
		case "label":
			p.labels = append(p.labels, labelField{name: name, index: i, rangeIndex: -1})
		case "remain":
			if !bodyType.AssignableTo(f.Type) {
				panic(fmt.Sprintf("decodeChecked: remain field %s.%s must be an hcl.Body", t, f.Name))
			}
			p.remain = i
		case "def_range":
			p.defRange = i
		case "type_range":
			p.typeRange = i
		case "label_range":
			// Resolved against the labels below, which may come later.
		case "attr_range", "attr_name_range", "attr_value_range":
			p.attrRanges = append(p.attrRanges, attrRangeField{attr: name, index: i, which: kind})
		default:
			panic(fmt.Sprintf("decodeChecked: unsupported hcl tag kind %q on %s.%s", kind, t, f.Name))
		}
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, kind, _ := strings.Cut(f.Tag.Get("hcl"), ",")
		if kind != "label_range" {
			continue
		}
		if f.Type != rangeType {
			panic(fmt.Sprintf("decodeChecked: label_range field %s.%s must be an hcl.Range", t, f.Name))
		}
		for j := range p.labels {
			if p.labels[j].name == name {
				p.labels[j].rangeIndex = i
			}
		}
	}
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*plan)
}

func (d *decoder) decode(p *plan, body hcl.Body, val reflect.Value) hcl.Diagnostics {
	var content *hcl.BodyContent
	var leftovers hcl.Body
	var diags hcl.Diagnostics
	switch {
	case p.partial:
		rest, ok := d.rest[p.typ]
		if !ok {
			panic(fmt.Sprintf("decodeChecked: no schema for the rest of a %s body", p.typ))
		}
		content, leftovers, diags = hclbody.PartialContent(body, p.schema, rest)
	default:
		content, diags = hclbody.Content(body, p.schema)
	}
	if content == nil {
		return diags
	}
	if p.remain >= 0 {
		val.Field(p.remain).Set(reflect.ValueOf(leftovers))
	}
	for _, af := range p.attrs {
		attr := content.Attributes[af.name]
		fv := val.Field(af.index)
		if attr == nil {
			if af.kind == attrExpression {
				// As gohcl does: an absent expression is a null one.
				fv.Set(reflect.ValueOf(hcl.StaticExpr(cty.NullVal(cty.DynamicPseudoType), body.MissingItemRange())))
			}
			continue
		}
		switch af.kind {
		case attrAttribute:
			fv.Set(reflect.ValueOf(attr))
		case attrExpression:
			fv.Set(reflect.ValueOf(attr.Expr))
		default:
			diags = append(diags, gohcl.DecodeExpression(attr.Expr, d.ectx, fv.Addr().Interface())...)
		}
	}
	for _, ar := range p.attrRanges {
		attr := content.Attributes[ar.attr]
		if attr == nil {
			continue
		}
		r := attr.Range
		switch ar.which {
		case "attr_name_range":
			r = attr.NameRange
		case "attr_value_range":
			r = attr.Expr.Range()
		}
		val.Field(ar.index).Set(reflect.ValueOf(r))
	}
	if len(p.blocks) == 0 {
		return diags
	}
	byType := content.Blocks.ByType()
	for _, bf := range p.blocks {
		blocks := byType[bf.typ]
		fv := val.Field(bf.index)
		if len(blocks) > 1 && !bf.slice {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Duplicate %s block", bf.typ),
				Detail:   fmt.Sprintf("Only one %s block is allowed. Another was defined at %s.", bf.typ, blocks[0].DefRange.String()),
				Subject:  &blocks[1].DefRange,
			})
			continue
		}
		if len(blocks) == 0 {
			if !bf.slice && !bf.ptr {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  fmt.Sprintf("Missing %s block", bf.typ),
					Detail:   fmt.Sprintf("A %s block is required.", bf.typ),
					Subject:  body.MissingItemRange().Ptr(),
				})
			}
			continue
		}
		bp := planFor(bf.elem)
		if !bf.slice {
			if bf.ptr {
				v := reflect.New(bf.elem)
				diags = append(diags, d.decodeBlock(bp, blocks[0], v.Elem())...)
				fv.Set(v)
			} else {
				diags = append(diags, d.decodeBlock(bp, blocks[0], fv)...)
			}
			continue
		}
		sli := reflect.MakeSlice(bf.fieldType, len(blocks), len(blocks))
		for i, block := range blocks {
			if bf.ptr {
				v := reflect.New(bf.elem)
				diags = append(diags, d.decodeBlock(bp, block, v.Elem())...)
				sli.Index(i).Set(v)
			} else {
				diags = append(diags, d.decodeBlock(bp, block, sli.Index(i))...)
			}
		}
		fv.Set(sli)
	}
	return diags
}

func (d *decoder) decodeBlock(p *plan, block *hcl.Block, v reflect.Value) hcl.Diagnostics {
	diags := d.decode(p, block.Body, v)
	for i, lv := range block.Labels {
		if i >= len(p.labels) {
			break
		}
		l := p.labels[i]
		v.Field(l.index).SetString(lv)
		if l.rangeIndex >= 0 {
			v.Field(l.rangeIndex).Set(reflect.ValueOf(block.LabelRanges[i]))
		}
	}
	if p.typeRange >= 0 {
		v.Field(p.typeRange).Set(reflect.ValueOf(block.TypeRange))
	}
	if p.defRange >= 0 {
		v.Field(p.defRange).Set(reflect.ValueOf(block.DefRange))
	}
	return diags
}
