package toolbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// resource is one entry of a tools.yaml, whichever format declared it.
type resource struct {
	kind string // "source", "tool", "toolset", "authService", "prompt", "embeddingModel"
	name string
	typ  string // postgres, postgres-sql, http, ...
	node *yaml.Node
	line int
}

// kinds maps the section names (old format) and kind values (new format),
// singular or plural, to a resource kind.
var kinds = map[string]string{
	"sources": "source", "source": "source",
	"tools": "tool", "tool": "tool",
	"toolsets": "toolset", "toolset": "toolset",
	"authServices": "authService", "authService": "authService",
	"authSources": "authService", "authSource": "authService",
	"prompts": "prompt", "prompt": "prompt",
	"embeddingModels": "embeddingModel", "embeddingModel": "embeddingModel",
}

// parse reads both Toolbox formats: the older one, one document of
// sections (sources:, tools:, ...) mapping names to entries whose kind:
// is their type; and the newer one, any number of documents each holding
// one resource (kind: tools, name: ..., type: postgres-sql).
func parse(data []byte) ([]*resource, []error) {
	var out []*resource
	var errs []error
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, append(errs, fmt.Errorf("not valid YAML: %w", err))
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("line %d: a document must be a mapping", root.Line))
			continue
		}
		if k := get(root, "kind"); k != nil && get(root, "name") != nil {
			kind, ok := kinds[k.Value]
			if !ok {
				errs = append(errs, fmt.Errorf("line %d: unknown kind %q", k.Line, k.Value))
				continue
			}
			typ := str(get(root, "type"))
			out = append(out, &resource{kind: kind, name: str(get(root, "name")), typ: typ, node: root, line: root.Line})
			continue
		}
		for i := 0; i+1 < len(root.Content); i += 2 {
			key, val := root.Content[i], root.Content[i+1]
			kind, ok := kinds[key.Value]
			if !ok {
				errs = append(errs, fmt.Errorf("line %d: unknown section %q", key.Line, key.Value))
				continue
			}
			if kind == "toolset" && val.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(val.Content); j += 2 {
					out = append(out, &resource{kind: kind, name: val.Content[j].Value, node: val.Content[j+1], line: val.Content[j].Line})
				}
				continue
			}
			if val.Kind != yaml.MappingNode {
				errs = append(errs, fmt.Errorf("line %d: %s must map names to entries", key.Line, key.Value))
				continue
			}
			for j := 0; j+1 < len(val.Content); j += 2 {
				n, e := val.Content[j], val.Content[j+1]
				typ := str(get(e, "kind"))
				if typ == "" {
					typ = str(get(e, "type"))
				}
				out = append(out, &resource{kind: kind, name: n.Value, typ: typ, node: e, line: n.Line})
			}
		}
	}
	return out, errs
}

// get returns the value of key in a mapping node, or nil.
func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func str(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func lineOf(n *yaml.Node, fallback int) int {
	if n != nil {
		return n.Line
	}
	return fallback
}

// value decodes a scalar, sequence or mapping node into JSON-like Go
// values (strings, float64, bool, nil, []any, map[string]any).
func value(n *yaml.Node) any {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int", "!!float":
			if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
				return f
			}
		case "!!bool":
			return n.Value == "true" || n.Value == "True" || n.Value == "TRUE"
		case "!!null":
			return nil
		}
		return n.Value
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, value(c))
		}
		return out
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			out[n.Content[i].Value] = value(n.Content[i+1])
		}
		return out
	case yaml.AliasNode:
		return value(n.Alias)
	}
	return nil
}

// entries returns a mapping node's keys and values in order.
func entries(m *yaml.Node) [][2]*yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		out = append(out, [2]*yaml.Node{m.Content[i], m.Content[i+1]})
	}
	return out
}
