package snapshot

import (
	"github.com/mcpd/mcpd/engine/redact"
)

// sensitiveArgs returns the top-level properties of an input schema marked
// "writeOnly": true, which is how a param with sensitive = true is written
// (and how a hand-written input_schema marks one).
func sensitiveArgs(in map[string]any) map[string]bool {
	props, _ := in["properties"].(map[string]any)
	var out map[string]bool
	for name, p := range props {
		if pm, ok := p.(map[string]any); ok {
			if wo, _ := pm["writeOnly"].(bool); wo {
				if out == nil {
					out = map[string]bool{}
				}
				out[name] = true
			}
		}
	}
	return out
}

// Sensitive reports whether the argument name is sensitive: its value is
// kept out of the audit log, logs and error texts.
func (t *Tool) Sensitive(name string) bool { return t.sensitive[name] }

// Redactor returns the redactor of the secrets the config read with env(),
// file() and filebase64(); nil when there are none.
func (s *Snapshot) Redactor() *redact.Redactor { return s.redactor }
