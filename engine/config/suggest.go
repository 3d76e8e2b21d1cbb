package config

import (
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/mcpd/mcpd/engine/suggest"
)

// unsupportedName finds the name in HCL's "Unsupported argument" and
// "Unsupported block type" details.
var unsupportedName = regexp.MustCompile(`^(?:An argument named|Blocks of type) "([^"]+)"`)

// withSuggestions adds "Did you mean" to the unsupported-name errors of a
// remain body. HCL suggests only among the schema it was given, and the
// remain body's schema holds the adapter or backend blocks alone: a
// misspelled `descriptoin` or `reslt` got no suggestion. known are every
// name valid in that body.
func withSuggestions(diags hcl.Diagnostics, known []string) hcl.Diagnostics {
	for _, d := range diags {
		if d.Summary != "Unsupported argument" && d.Summary != "Unsupported block type" {
			continue
		}
		if strings.Contains(d.Detail, "Did you mean") {
			continue
		}
		m := unsupportedName.FindStringSubmatch(d.Detail)
		if m == nil {
			continue
		}
		if dym := suggest.DidYouMean(m[1], known); dym != "" {
			d.Detail += dym
		}
	}
	return diags
}

// schemaNames lists the attribute and block names of a decoded struct
// (gohcl tags) and extra ones.
func schemaNames(v any, extra []string) []string {
	schema, _ := gohcl.ImpliedBodySchema(v)
	var names []string
	for _, a := range schema.Attributes {
		names = append(names, a.Name)
	}
	for _, b := range schema.Blocks {
		names = append(names, b.Type)
	}
	return append(names, extra...)
}
