package httpadapter

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
)

// multiMap is a map expression (query, headers, form) whose values are
// strings or lists of strings: a list sends the name once per element.
// Null values, and null list elements, are left out, so that an optional
// argument that was not given sends nothing.
type multiMap struct {
	what   string              // "query", "headers", "form", for messages
	expr   hcl.Expression      // nil when absent
	static map[string][]string // evaluated at load when expr is static
}

func (m *multiMap) eval(ectx *hcl.EvalContext) (map[string][]string, error) {
	if m == nil || m.expr == nil {
		return nil, nil
	}
	if m.static != nil {
		return m.static, nil
	}
	v, diags := m.expr.Value(ectx)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: %w", m.what, adapter.DiagError(diags))
	}
	out, err := multiMapValue(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.what, err)
	}
	return out, nil
}

func multiMapValue(v cty.Value) (map[string][]string, error) {
	v, _ = v.UnmarkDeep()
	if v.IsNull() {
		return map[string][]string{}, nil
	}
	if !v.IsWhollyKnown() {
		return nil, fmt.Errorf("value is unknown")
	}
	if !v.Type().IsMapType() && !v.Type().IsObjectType() {
		return nil, fmt.Errorf("a map of strings is required, got %s", v.Type().FriendlyName())
	}
	out := make(map[string][]string, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		name := k.AsString()
		if ev.IsNull() {
			continue
		}
		t := ev.Type()
		if t.IsListType() || t.IsTupleType() || t.IsSetType() {
			i := 0
			for eit := ev.ElementIterator(); eit.Next(); i++ {
				_, e := eit.Element()
				if e.IsNull() {
					continue
				}
				s, err := adapter.ValueString(e)
				if err != nil {
					return nil, fmt.Errorf("key %q, element %d: %w", name, i, err)
				}
				out[name] = append(out[name], s)
			}
			continue
		}
		s, err := adapter.ValueString(ev)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", name, err)
		}
		out[name] = append(out[name], s)
	}
	return out, nil
}

// jsonBody is the body attribute: any value, sent as JSON.
type jsonBody struct {
	expr   hcl.Expression
	static []byte // encoded at load when expr is static; nil with isNull
	isNull bool   // static and null: no body is sent
}

func (b *jsonBody) eval(ectx *hcl.EvalContext) ([]byte, error) {
	if b == nil || b.expr == nil {
		return nil, nil
	}
	if b.static != nil || b.isNull {
		return b.static, nil
	}
	v, diags := b.expr.Value(ectx)
	if diags.HasErrors() {
		return nil, fmt.Errorf("body: %w", adapter.DiagError(diags))
	}
	data, err := encodeJSON(v)
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	return data, nil
}

// encodeJSON encodes v as compact JSON without HTML escaping. Object
// attributes whose value is null are left out (an optional argument that
// was not given sends nothing); a null body encodes to nil (no body).
func encodeJSON(v cty.Value) ([]byte, error) {
	g, err := adapter.ToGo(v)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, nil
	}
	g = dropNulls(g)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(g); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func dropNulls(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
				continue
			}
			v[k] = dropNulls(e)
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return x
}
