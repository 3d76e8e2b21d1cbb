package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/loader"
)

// loadWithoutSecrets loads the config for list, call, read and prompt,
// which must work without the secrets that only some calls need: an env()
// variable that is not set is not an error (as in `mcpd validate`), and
// stderr names the unset variables in one line instead of a diagnostic
// each (list; call, read and prompt name those what they run needs, see
// needsUnset). The snapshot is never served: a call, read or prompt must
// first pass needsUnset. checkOnly dials nothing
// shared (the state block's Redis), for what does not call.
func loadWithoutSecrets(cmd string, c *common, reg *adapter.Registry, stderr io.Writer, checkOnly bool) (*loader.Loaded, error) {
	l := loader.LoadWith(c.paths(), reg, nil, mcpdVersion(), loader.Options{UnsetEnvWarning: true, CheckOnly: checkOnly})
	var unset []funcs.UnsetEnvCall
	if l.Config != nil {
		unset = l.Config.UnsetEnv
	}
	config.WriteDiagnostics(stderr, withoutUnsetWarnings(l.Diagnostics, unset), l.Sources)
	if l.Snapshot == nil {
		if !l.Diagnostics.HasErrors() {
			// Never exit 1 in silence: what refused the config was
			// dropped as a repeat of an unset variable's warning.
			fmt.Fprintf(stderr, "mcpd %s: the config did not compile, and no error says why; its unset variables are: %s (set them and run `mcpd validate` for the details)\n", cmd, strings.Join(unsetNames(unset), ", "))
		}
		return nil, exitError(1)
	}
	// list says which are missing; the others say so only of those what
	// they run needs (needsUnset).
	if names := unsetNames(unset); len(names) > 0 && cmd == "list" {
		fmt.Fprintf(stderr, "mcpd list: not set: %s (the tools that need them cannot be called until they are)\n", strings.Join(names, ", "))
	}
	return l, nil
}

// withoutUnsetWarnings drops the loader's warning for each unset variable
// (one line says it instead).
func withoutUnsetWarnings(diags hcl.Diagnostics, unset []funcs.UnsetEnvCall) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning && d.Subject != nil && slices.ContainsFunc(unset, func(c funcs.UnsetEnvCall) bool { return c.Range == *d.Subject }) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func unsetNames(unset []funcs.UnsetEnvCall) []string {
	var names []string
	for _, c := range unset {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	return names
}

// needsUnset returns the error that stops `mcpd call`, `read` or `prompt`
// from running the item of kind ("tool", "resource", "resource_template",
// "prompt": the block type that declares it) named name when it needs a
// variable that is not set: one read in the item's own block, in a backend
// block it uses (backends, as Tool.Backends), or anywhere outside the blocks
// of other tools, resources, prompts and other backends (the server block,
// its state, auth: they may concern every call). nil when it needs none.
func needsUnset(l *loader.Loaded, reg *adapter.Registry, kind, name string, backends []string) error {
	if l.Config == nil || len(l.Config.UnsetEnv) == 0 {
		return nil
	}
	backendTypes := reg.BackendBlocks()
	var need []string
	var where []string
	for _, c := range l.Config.UnsetEnv {
		typ, label := enclosingBlock(l.Sources[c.Range.Filename], c.Range)
		switch {
		case typ == kind && label == name:
		case slices.Contains(backendTypes, typ):
			if !slices.Contains(backends, typ+" "+label) {
				continue
			}
		case slices.Contains([]string{"tool", "resource", "resource_template", "prompt", "test"}, typ):
			continue
		}
		if slices.Contains(need, c.Name) {
			continue
		}
		need = append(need, c.Name)
		in := ""
		if typ != "" {
			in = " in " + typ
			if label != "" {
				in += fmt.Sprintf(" %q", label)
			}
		}
		where = append(where, fmt.Sprintf("env(%q) at %s:%d:%d%s", c.Name, c.Range.Filename, c.Range.Start.Line, c.Range.Start.Column, in))
	}
	if len(need) == 0 {
		return nil
	}
	verb, noun := "is", "it"
	if len(need) > 1 {
		verb, noun = "are", "them"
	}
	use := map[string]string{"tool": "call the tool", "prompt": "get the prompt"}[kind]
	if use == "" {
		use = "read the resource"
	}
	return fmt.Errorf("%s %q needs %s, which %s not set (%s); set %s to %s",
		kind, name, strings.Join(need, ", "), verb, strings.Join(where, "; "), noun, use)
}

// enclosingBlock is the type and first label of the top-level block of src
// that contains rng ("" when none, or when src does not parse).
func enclosingBlock(src []byte, rng hcl.Range) (typ, label string) {
	f, diags := hclsyntax.ParseConfig(src, rng.Filename, hcl.InitialPos)
	if diags.HasErrors() {
		return "", ""
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return "", ""
	}
	for _, b := range body.Blocks {
		r := b.Range()
		if r.Start.Byte <= rng.Start.Byte && rng.End.Byte <= r.End.Byte {
			if len(b.Labels) > 0 {
				label = b.Labels[0]
			}
			return b.Type, label
		}
	}
	return "", ""
}
