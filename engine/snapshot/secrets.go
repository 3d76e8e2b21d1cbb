package snapshot

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/redact"
)

// Secrets are the values env(), file() and filebase64() read in the blocks
// that talk to backends: adapter blocks (in tools, resources and resource
// templates) and backend blocks. Every result, resource content and prompt
// message leaves the snapshot through the snapshot's one Redactor, which
// replaces them wherever an adapter's output, an error or a shaped result
// carries them. Values the config itself shows the model (descriptions,
// prompt and resource text, result contents) are not secrets: redacting
// text = file("prompt.md") would blank the prompt.

// recordSecrets evaluates every env(), file() and filebase64() call of the
// config's adapter and backend blocks, including those an adapter only runs
// on a call, and returns the values they read.
func recordSecrets(cfg *config.Config) *redact.Set {
	set := &redact.Set{}
	tables := map[string]map[string]function.Function{}
	eval := func(dir string, body hcl.Body) {
		t, ok := tables[dir]
		if !ok {
			t = funcs.TableWith(dir, funcs.Options{Secrets: set, UnsetEnvUnknown: cfg.UnsetEnvUnknown})
			tables[dir] = t
		}
		funcs.EvalSecretCalls(body, &hcl.EvalContext{Functions: t})
	}
	for _, b := range cfg.Backends {
		eval(b.Dir, b.Body)
	}
	for _, t := range cfg.Tools {
		if t.Adapter != nil {
			eval(t.Dir, t.Adapter.Body)
		}
	}
	for _, r := range cfg.Resources {
		if r.Adapter != nil {
			eval(r.Dir, r.Adapter.Body)
		}
	}
	for _, r := range cfg.ResourceTemplates {
		if r.Adapter != nil {
			eval(r.Dir, r.Adapter.Body)
		}
	}
	return set
}
