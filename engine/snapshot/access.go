package snapshot

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/principal"
)

// View is what one caller may see of a snapshot: the lists without the
// tools, resources, templates and prompts whose scopes it lacks. Its lists
// must not be modified.
type View struct {
	Tools     []*Tool
	Resources []*Resource
	Templates []*Template
	Prompts   []*Prompt
}

// maxViews bounds the views a snapshot caches. Views are keyed by the
// caller's scopes that some item requires, so a config with a handful of
// scope sets needs a handful of views; past the bound a view is built per
// request instead of cached.
const maxViews = 256

// access is the snapshot's authorization state: every list unfiltered, and
// the views computed so far.
type access struct {
	all *View
	// required holds every scope some item requires: a caller's other
	// scopes make no difference to what it sees.
	required map[string]bool

	mu    sync.Mutex
	views map[string]*View
}

// normScopes sorts and deduplicates a scopes attribute; nil for none.
func normScopes(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	sort.Strings(out)
	return slices.Compact(out)
}

func (s *Snapshot) initAccess() {
	s.access = newAccess(&View{Tools: s.Tools, Resources: s.Resources, Templates: s.Templates, Prompts: s.Prompts})
}

// newAccess is the authorization state of the lists of all: a snapshot's,
// or a toolset's (see toolset.go).
func newAccess(all *View) *access {
	a := &access{
		all:      all,
		required: map[string]bool{},
		views:    map[string]*View{},
	}
	note := func(scopes []string) {
		for _, sc := range scopes {
			a.required[sc] = true
		}
	}
	for _, t := range all.Tools {
		note(t.scopes)
	}
	for _, r := range all.Resources {
		note(r.scopes)
	}
	for _, t := range all.Templates {
		note(t.scopes)
	}
	for _, p := range all.Prompts {
		note(p.scopes)
	}
	return a
}

// View returns what p may see. The local user (nil) and every caller of a
// config that requires no scopes see everything, without a lookup.
func (s *Snapshot) View(p *principal.Principal) *View { return s.access.view(p) }

func (a *access) view(p *principal.Principal) *View {
	if p == nil || len(a.required) == 0 {
		return a.all
	}
	var held []string
	for _, sc := range p.Scopes {
		if a.required[sc] {
			held = append(held, sc)
		}
	}
	held = normScopes(held)
	key := strings.Join(held, "\x00")
	a.mu.Lock()
	v, ok := a.views[key]
	a.mu.Unlock()
	if ok {
		return v
	}
	// Filtering with the relevant scopes only gives the same view as with
	// all of p's, and is what the key says.
	q := &principal.Principal{Scopes: held}
	v = &View{
		Tools:     filter(a.all.Tools, func(t *Tool) bool { return q.HasScopes(t.scopes) }),
		Resources: filter(a.all.Resources, func(r *Resource) bool { return q.HasScopes(r.scopes) }),
		Templates: filter(a.all.Templates, func(t *Template) bool { return q.HasScopes(t.scopes) }),
		Prompts:   filter(a.all.Prompts, func(p *Prompt) bool { return q.HasScopes(p.scopes) }),
	}
	a.mu.Lock()
	if len(a.views) < maxViews {
		a.views[key] = v
	}
	a.mu.Unlock()
	return v
}

func filter[T any](in []T, keep func(T) bool) []T {
	out := make([]T, 0, len(in))
	for _, x := range in {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// ToolFor returns the tool named name if p may call it. A tool p lacks the
// scopes for is reported as not found, exactly as an unknown one, so that
// a caller cannot learn which tools exist beyond its own.
func (s *Snapshot) ToolFor(name string, p *principal.Principal) (*Tool, bool) {
	t, ok := s.tools[name]
	if !ok || !p.HasScopes(t.scopes) {
		return nil, false
	}
	return t, true
}

// PromptFor returns the prompt named name if p may get it; like ToolFor,
// a prompt p may not use is not found.
func (s *Snapshot) PromptFor(name string, p *principal.Principal) (*Prompt, bool) {
	pr, ok := s.prompts[name]
	if !ok || !p.HasScopes(pr.scopes) {
		return nil, false
	}
	return pr, true
}

// Completable reports whether p may see what ref refers to, so that
// completion/complete tells nothing of prompts and templates p cannot use.
func (s *Snapshot) Completable(ref *mcp.CompleteReference, p *principal.Principal) bool {
	if p == nil || ref == nil {
		return true
	}
	switch ref.Type {
	case "ref/prompt":
		_, ok := s.PromptFor(ref.Name, p)
		return ok
	case "ref/resource":
		for _, t := range s.Templates {
			if t.Def.URITemplate == ref.URI && !p.HasScopes(t.scopes) {
				return false
			}
		}
	}
	return true
}

// Requires returns the scope sets that would let a caller see what a call
// of kind ("tool", "prompt" or "resource") named name reached: one set for
// a tool or a prompt, one per static resource or template that answers a
// URI. A caller sees it when it holds every scope of some set; nil when
// nothing of that name is declared, which no caller sees. The console
// filters the calls it shows with it (see authoring/console).
func (s *Snapshot) Requires(kind, name string) [][]string {
	switch kind {
	case "tool":
		if t, ok := s.tools[name]; ok {
			return [][]string{t.scopes}
		}
	case "prompt":
		if p, ok := s.prompts[name]; ok {
			return [][]string{p.scopes}
		}
	case "resource":
		var sets [][]string
		if r, ok := s.resources[name]; ok {
			sets = append(sets, r.scopes)
		}
		for _, t := range s.Templates {
			if _, ok, _ := t.Bind(name); ok {
				sets = append(sets, t.scopes)
			}
		}
		return sets
	}
	return nil
}
