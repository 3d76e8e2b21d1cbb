package lsp

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
)

// A blockSchema is what may appear inside one block type, for completion
// and hover: the core blocks' shape comes from the config structs the
// loader decodes (gohcl's implied schema), an adapter's from the Schema it
// declares, so that neither can drift from what the loader accepts.
type blockSchema struct {
	attrs  []hcl.AttributeSchema
	blocks map[string]*blockSchema
	labels map[string][]string // label names of each nested block type
	// adapter is the adapter owning this block ("" for the core blocks),
	// for hover text.
	adapter string
}

func (s *blockSchema) blockNames() []string {
	out := make([]string, 0, len(s.blocks))
	for n := range s.blocks {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (s *blockSchema) attr(name string) (hcl.AttributeSchema, bool) {
	for _, a := range s.attrs {
		if a.Name == name {
			return a, true
		}
	}
	return hcl.AttributeSchema{}, false
}

// implied is the schema of a config struct, its nested block structs
// followed by reflection through kids.
func implied(v any, kids map[string]*blockSchema) *blockSchema {
	bs, _ := gohcl.ImpliedBodySchema(v)
	s := &blockSchema{attrs: bs.Attributes, blocks: map[string]*blockSchema{}, labels: map[string][]string{}}
	for _, b := range bs.Blocks {
		k := kids[b.Type]
		if k == nil {
			k = &blockSchema{blocks: map[string]*blockSchema{}, labels: map[string][]string{}}
		}
		s.blocks[b.Type] = k
		s.labels[b.Type] = b.LabelNames
	}
	return s
}

func fromAdapter(name string, as *adapter.Schema) *blockSchema {
	s := &blockSchema{blocks: map[string]*blockSchema{}, labels: map[string][]string{}, adapter: name}
	if as == nil {
		return s
	}
	s.attrs = as.Attributes
	for _, b := range as.Blocks {
		s.blocks[b.Type] = fromAdapter(name, b.Schema)
		s.labels[b.Type] = b.LabelNames
	}
	return s
}

// rootSchema is the top level of a config file for reg's adapters.
func rootSchema(reg *adapter.Registry) *blockSchema {
	content := implied(&config.Content{}, nil)
	result := implied(&config.Result{}, map[string]*blockSchema{"content": content})
	tool := implied(&config.Tool{}, map[string]*blockSchema{
		"annotations": implied(&config.Annotations{}, nil),
		"param":       implied(&config.Param{}, nil),
		"result":      result,
		"progress":    implied(&config.Progress{}, nil),
		"log":         implied(&config.Log{}, nil),
		"ask":         implied(&config.Ask{}, nil),
		"rate_limit":  implied(&config.RateLimit{}, nil),
		"cache":       implied(&config.Cache{}, nil),
		"task":        implied(&config.Task{}, nil),
	})
	for _, name := range reg.ToolBlocks() {
		a, _ := reg.Adapter(name)
		var as *adapter.Schema
		if sc, ok := a.(adapter.Schemaer); ok {
			as = sc.ToolSchema()
		}
		tool.blocks[name] = fromAdapter(name, as)
	}
	root := implied(&fileContentDoc{}, map[string]*blockSchema{
		"server":            implied(&config.Server{}, map[string]*blockSchema{"cache": implied(&config.Cache{}, nil)}),
		"tool":              tool,
		"resource":          implied(&config.Resource{}, nil),
		"resource_template": implied(&config.ResourceTemplate{}, nil),
		"prompt":            implied(&config.Prompt{}, map[string]*blockSchema{"param": implied(&config.Param{}, nil), "content": content}),
		"auth":              implied(&config.Auth{}, map[string]*blockSchema{"api_key": implied(&config.APIKey{}, nil), "oauth": implied(&config.OAuth{}, nil)}),
		"test":              implied(&config.Test{}, nil),
		"toolset":           implied(&config.Toolset{}, nil),
	})
	for _, name := range reg.BackendBlocks() {
		ba, _ := reg.BackendAdapter(name)
		var as *adapter.Schema
		if sc, ok := ba.(adapter.BackendSchemaer); ok {
			as = sc.BackendSchema()
		}
		root.blocks[name] = fromAdapter(name, as)
		root.labels[name] = []string{"name"}
	}
	return root
}

// fileContentDoc mirrors the loader's top level (config's fileContent is
// unexported); TestRootSchemaMatchesLoader checks that it accepts the same
// blocks.
type fileContentDoc struct {
	Servers           []*config.Server           `hcl:"server,block"`
	Tools             []*config.Tool             `hcl:"tool,block"`
	Resources         []*config.Resource         `hcl:"resource,block"`
	ResourceTemplates []*config.ResourceTemplate `hcl:"resource_template,block"`
	Prompts           []*config.Prompt           `hcl:"prompt,block"`
	Auths             []*config.Auth             `hcl:"auth,block"`
	Tests             []*config.Test             `hcl:"test,block"`
	Toolsets          []*config.Toolset          `hcl:"toolset,block"`
}
