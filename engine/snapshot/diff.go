package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Changes is what a client can see change between two snapshots.
type Changes struct {
	Tools, Prompts, Resources Diff
	// Updated are resources present in both whose contents changed (as far
	// as can be known without reading them: static text, files).
	Updated []string
	// Toolsets are the toolsets whose clients see a change: added,
	// removed, or showing other items or scopes (see toolset.go); and ""
	// when server.default_toolset changed, which /mcp serves.
	Toolsets []string
}

// Empty reports whether a client would see no difference.
func (c Changes) Empty() bool {
	return c.Tools.Empty() && c.Prompts.Empty() && c.Resources.Empty() && len(c.Updated) == 0 && len(c.Toolsets) == 0
}

// changedToolsets names the toolsets of old and new whose clients see a
// change.
func changedToolsets(old, new *Snapshot) []string {
	var out []string
	for _, ts := range new.Toolsets {
		if o, ok := old.Toolset(ts.Name); !ok || o.Fingerprints() != ts.Fingerprints() {
			out = append(out, ts.Name)
		}
	}
	for _, ts := range old.Toolsets {
		if _, ok := new.Toolset(ts.Name); !ok {
			out = append(out, ts.Name)
		}
	}
	if old.Server.DefaultToolset != new.Server.DefaultToolset {
		out = append(out, "")
	}
	slices.Sort(out)
	return out
}

// Compare reports what changed from old to new. A change in list order
// counts as a change of the list (Reordered), since clients see the order.
func Compare(old, new *Snapshot) Changes {
	var c Changes
	c.Tools = diffDefs(defs(old.Tools, func(t *Tool) (string, any) { return t.Def.Name, t.Def }),
		defs(new.Tools, func(t *Tool) (string, any) { return t.Def.Name, t.Def }))
	c.Prompts = diffDefs(defs(old.Prompts, func(p *Prompt) (string, any) { return p.Def.Name, p.Def }),
		defs(new.Prompts, func(p *Prompt) (string, any) { return p.Def.Name, p.Def }))
	oldRes := append(defs(old.Resources, func(r *Resource) (string, any) { return r.Def.URI, r.Def }),
		defs(old.Templates, func(t *Template) (string, any) { return t.Def.URITemplate, t.Def })...)
	newRes := append(defs(new.Resources, func(r *Resource) (string, any) { return r.Def.URI, r.Def }),
		defs(new.Templates, func(t *Template) (string, any) { return t.Def.URITemplate, t.Def })...)
	c.Resources = diffDefs(oldRes, newRes)
	c.Toolsets = changedToolsets(old, new)
	for _, r := range new.Resources {
		if o, ok := old.resources[r.Def.URI]; ok && o.version != r.version {
			c.Updated = append(c.Updated, r.Def.URI)
		}
	}
	return c
}

type namedDef struct{ name, js string }

func defs[T any](items []T, f func(T) (string, any)) []namedDef {
	out := make([]namedDef, 0, len(items))
	for _, it := range items {
		name, def := f(it)
		b, _ := json.Marshal(def)
		out = append(out, namedDef{name, string(b)})
	}
	return out
}

// Diff names what was added, removed or changed in one list.
type Diff struct {
	Added, Removed, Changed []string
	Reordered               bool
}

// Empty reports whether nothing changed.
func (d Diff) Empty() bool {
	return len(d.Added)+len(d.Removed)+len(d.Changed) == 0 && !d.Reordered
}

func (d Diff) String() string {
	return fmt.Sprintf("+%v -%v ~%v", d.Added, d.Removed, d.Changed)
}

func diffDefs(old, new []namedDef) Diff {
	var d Diff
	om := make(map[string]string, len(old))
	var oldOrder []string
	for _, o := range old {
		om[o.name] = o.js
		oldOrder = append(oldOrder, o.name)
	}
	nm := make(map[string]bool, len(new))
	var newOrder []string
	for _, n := range new {
		nm[n.name] = true
		js, ok := om[n.name]
		switch {
		case !ok:
			d.Added = append(d.Added, n.name)
		case js != n.js:
			d.Changed = append(d.Changed, n.name)
		default:
			newOrder = append(newOrder, n.name)
		}
	}
	for _, o := range old {
		if !nm[o.name] {
			d.Removed = append(d.Removed, o.name)
		}
	}
	// Only the unchanged items' relative order matters here: additions,
	// removals and changes are reported anyway.
	kept := slices.DeleteFunc(oldOrder, func(n string) bool { return !nm[n] || slices.Contains(d.Changed, n) })
	d.Reordered = !slices.Equal(kept, newOrder)
	slices.Sort(d.Added)
	slices.Sort(d.Removed)
	slices.Sort(d.Changed)
	return d
}

// sourceVersion identifies a resource source's contents where that can be
// known at load time: static text or blob by value, a file by its size and
// modification time. Sources read per call (adapters, argument-dependent
// text) have no version and never report an update.
func sourceVersion(s *source) string {
	h := sha256.New()
	switch {
	case s.file != "":
		fi, err := os.Stat(s.file)
		if err != nil {
			return "missing"
		}
		fmt.Fprintf(h, "file %d %d", fi.Size(), fi.ModTime().UnixNano())
	case s.text != nil && adapter.IsStatic(s.text):
		v, err := adapter.EvalString(s.text, s.scope.EvalContext())
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "text %s", v)
	case s.blob != nil && adapter.IsStatic(s.blob):
		v, err := adapter.EvalString(s.blob, s.scope.EvalContext())
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "blob %s", v)
	default:
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}
