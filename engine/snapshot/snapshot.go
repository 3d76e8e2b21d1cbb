// Package snapshot compiles a loaded config into one immutable value that
// every request reads: tools with their compiled schemas, adapters and
// result shapes; resources, templates and prompts; and the live backends
// they use. A reload builds a whole new snapshot beside the old one and
// swaps a pointer (see Current); nothing is ever changed in place.
package snapshot

import (
	"github.com/mcpd/mcpd/engine/auth"

	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/cache"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/limits"
	"github.com/mcpd/mcpd/engine/lock"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/sharedstate"
)

// Snapshot is one compiled config. Its exported lists are in declaration
// order (files in sorted order, blocks in file order) and must not be
// modified.
type Snapshot struct {
	Server    ServerInfo
	Tools     []*Tool
	Resources []*Resource
	Templates []*Template
	Prompts   []*Prompt
	// Toolsets are the compiled toolset blocks, in declaration order (see
	// toolset.go).
	Toolsets []*Toolset
	// Files are the config files this snapshot was loaded from.
	Files []string

	tools     map[string]*Tool
	resources map[string]*Resource
	prompts   map[string]*Prompt
	backends  map[string]*liveBackend
	access    *access // see access.go
	// contributors are the backend configs that contribute tools at run
	// time (contributed.go).
	contributors []contributor
	// pins, drifts and lockPath: what was checked against the lock file
	// (pins.go).
	pins     *pinTracker
	drifts   []Drift
	lockPath string

	fpOnce sync.Once // Fingerprints
	fp     [3]string

	redactor *redact.Redactor // nil: no secrets

	// memCache is the in-memory result cache, carried over by a reload
	// with the same bound; nil when no tool is cached.
	memCache *cache.Memory
	// used remembers the requestStates that have run a tool (replay.go),
	// carried over by every reload.
	used *requeststate.Used

	// state is the shared state of the server's state block; nil: none
	// (every limit is this process's). Like a backend it is taken over by
	// the next snapshot when its settings are unchanged.
	state *sharedstate.Store

	mu       sync.Mutex
	inflight int
	retired  bool
	released chan struct{}

	// Auth is the compiled auth block (nil: no auth), set by loader.Load.
	Auth *auth.Config
}

// ServerInfo is the server block, with defaults filled in.
type ServerInfo struct {
	Name, Version, Title, Instructions, WebsiteURL string
	// Description and Icons describe the server to hosts and in its
	// Server Card (icons.go).
	Description string
	Icons       []mcp.Icon
	// StateSealer signs the requestState of asking tools with the key of
	// server.request_state_key; nil: none set (the server uses a random
	// key of its own).
	StateSealer *requeststate.Sealer
	// DefaultToolset is the toolset /mcp and stdio without --toolset
	// serve (server.default_toolset); "": everything.
	DefaultToolset string
}

type liveBackend struct {
	fingerprint string
	backend     adapter.Backend
}

// Build compiles cfg. prev, when not nil, is the snapshot being replaced:
// backends whose settings are unchanged are taken over from it (with their
// connection pools) instead of being opened anew. On error nothing is kept
// open and prev is untouched.
func Build(cfg *config.Config, reg *adapter.Registry, prev *Snapshot, defaultVersion string) (*Snapshot, hcl.Diagnostics) {
	return BuildWith(cfg, reg, prev, defaultVersion, BuildOptions{})
}

// BuildOptions change what Build does besides compiling.
type BuildOptions struct {
	// CheckOnly builds a snapshot to check a config, never to serve it
	// (`mcpd validate`, the editor's diagnostics): the state block is
	// compiled and checked, but its Redis is not dialed (there is no
	// Store, as when its URL is unknown at load).
	CheckOnly bool
	// Lock is the lock file the contributed definitions are checked
	// against (pins.go), read from LockPath; nil: there is none.
	Lock     *lock.File
	LockPath string
	// NoPinning serves every contributed definition as listed, lock or
	// not (`mcpd lock`, which records them).
	NoPinning bool
}

// BuildWith is Build with options.
func BuildWith(cfg *config.Config, reg *adapter.Registry, prev *Snapshot, defaultVersion string, opts BuildOptions) (*Snapshot, hcl.Diagnostics) {
	s := &Snapshot{
		Files:     cfg.Files,
		tools:     map[string]*Tool{},
		resources: map[string]*Resource{},
		prompts:   map[string]*Prompt{},
		backends:  map[string]*liveBackend{},
		released:  make(chan struct{}),
	}
	s.Server = ServerInfo{Name: "mcpd", Version: defaultVersion}
	if sv := cfg.Server; sv != nil {
		if sv.Name != "" {
			s.Server.Name = sv.Name
		}
		if sv.Version != "" {
			s.Server.Version = sv.Version
		}
		s.Server.Title, s.Server.Instructions, s.Server.WebsiteURL = sv.Title, sv.Instructions, sv.WebsiteURL
		s.Server.Description, s.Server.Icons = sv.Description, mcpIcons(sv.Icons)
	}
	stateDiags := stateSealer(cfg.Server, &s.Server)

	secrets := recordSecrets(cfg)
	ft := funcTables{opts: funcs.Options{UnsetEnvUnknown: cfg.UnsetEnvUnknown}, tables: map[string]map[string]function.Function{}}
	ft.auth = authInfo(cfg.Auth, ft)
	sl, diags := compileServerLimits(cfg.Server)
	sc, cacheDiags := compileServerCache(cfg.Server)
	diags = append(diags, cacheDiags...)
	diags = append(diags, stateDiags...)
	diags = append(diags, s.openState(cfg, prev, secrets, opts.CheckOnly)...)
	sl.hasState, sl.state = cfg.Server != nil && cfg.Server.State != nil, s.state
	diags = append(diags, s.openBackends(cfg, reg, prev, ft)...)
	backend := &backendSet{live: s.backends, declared: map[string][]string{}}
	for _, bc := range cfg.Backends {
		backend.declared[bc.Type] = append(backend.declared[bc.Type], bc.Name)
	}
	for _, tc := range cfg.Tools {
		t, d := compileTool(tc, reg, backend, ft, sl, sc, cfg.Server != nil && cfg.Server.ConfirmDestructive)
		diags = append(diags, d...)
		if t != nil {
			if prev != nil {
				if old, ok := prev.tools[t.Def.Name]; ok {
					limits.Carry(t.limits, old.limits)
				}
			}
			s.Tools = append(s.Tools, t)
			s.tools[t.Def.Name] = t
		}
	}
	for _, rc := range cfg.Resources {
		r, d := compileResource(rc, reg, backend, ft, sl)
		diags = append(diags, d...)
		if r != nil {
			r.scopes = normScopes(rc.Scopes)
			s.Resources = append(s.Resources, r)
			s.resources[r.Def.URI] = r
		}
	}
	for _, rc := range cfg.ResourceTemplates {
		t, d := compileTemplate(rc, reg, backend, ft, sl)
		diags = append(diags, d...)
		if t != nil {
			t.scopes = normScopes(rc.Scopes)
			s.Templates = append(s.Templates, t)
		}
	}
	for _, pc := range cfg.Prompts {
		p, d := compilePrompt(pc, ft)
		diags = append(diags, d...)
		if p != nil {
			p.scopes = normScopes(pc.Scopes)
			s.Prompts = append(s.Prompts, p)
			s.prompts[p.Def.Name] = p
		}
	}
	// Contributed tools first: a toolset's patterns select them too.
	s.addContributed(prev, sl, s.checkPins(prev, opts))
	diags = append(diags, s.compileToolsets(cfg)...)
	if diags.HasErrors() {
		s.closeBackends(prev)
		return nil, diags
	}
	s.setRedactor(secrets.Redactor())
	s.initCache(cfg, prev, sc, secrets.Values())
	for _, t := range s.Tools {
		if t.limits != nil && t.limits.State() != nil {
			t.state = t.limits.State()
		}
	}
	s.initReplay(prev)
	s.initAccess()
	return s, diags
}

// setRedactor hands the snapshot's one redactor to everything that returns
// output to the model.
func (s *Snapshot) setRedactor(r *redact.Redactor) {
	s.redactor = r
	for _, t := range s.Tools {
		t.redact = r
	}
	// A resource whose contents the config itself declares (text, blob,
	// file) publishes them on purpose: the same file may also be read with
	// file() elsewhere (a database's seed), and redacting it would blank
	// the resource. Only what an adapter produces is redacted.
	for _, res := range s.Resources {
		if res.src.handler != nil || res.src.remote != nil {
			res.src.redact = r
		}
	}
	for _, t := range s.Templates {
		if t.src.handler != nil || t.src.remote != nil {
			t.src.redact = r
		}
	}
	for _, p := range s.Prompts {
		p.redact = r
	}
}

func (s *Snapshot) openBackends(cfg *config.Config, reg *adapter.Registry, prev *Snapshot, ft funcTables) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, bc := range cfg.Backends {
		ba, ok := reg.BackendAdapter(bc.Type)
		if !ok {
			panic("unregistered backend block " + bc.Type)
		}
		scope := &adapter.Scope{Dir: bc.Dir, Functions: ft.get(bc.Dir), Auth: ft.auth}
		conf, d := ba.DecodeBackend(&adapter.BackendBlock{Name: bc.Name, Body: bc.Body, Range: bc.DeclRange, Scope: scope})
		diags = append(diags, d...)
		if d.HasErrors() || conf == nil {
			continue
		}
		key := bc.Type + " " + bc.Name
		fp := conf.Fingerprint()
		if isContributor(conf) {
			s.contributors = append(s.contributors, contributor{key: key, conf: conf})
		}
		if prev != nil {
			if old, ok := prev.backends[key]; ok && old.fingerprint == fp {
				s.backends[key] = old
				continue
			}
		}
		b, err := conf.Open()
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Cannot set up %s %q", bc.Type, bc.Name),
				Detail:   err.Error(),
				Subject:  bc.DeclRange.Ptr(),
			})
			continue
		}
		s.backends[key] = &liveBackend{fingerprint: fp, backend: b}
	}
	return diags
}

// backendSet is what a Build hands the adapters about backends: the live
// ones, and the names declared per block type, for "did you mean".
type backendSet struct {
	live     map[string]*liveBackend
	declared map[string][]string
}

func (b *backendSet) get(blockType, name string) (adapter.Backend, bool) {
	lb, ok := b.live[blockType+" "+name]
	if !ok {
		return nil, false
	}
	return lb.backend, true
}

func (b *backendSet) names(blockType string) []string { return b.declared[blockType] }

// funcTables hands every block of one Build the same function table per
// directory instead of a fresh one per block. Tables are never modified.
type funcTables struct {
	opts   funcs.Options
	tables map[string]map[string]function.Function
	// auth is what the config's auth block verifies of callers, handed
	// to every adapter.Scope with the functions.
	auth *adapter.AuthInfo
}

// authInfo is what adapters are told of the auth block a (nil: none).
// ft's functions evaluate its audience and the API keys' attributes; a
// value that does not evaluate is left out (auth.Compile reports it), and
// attributes that cannot be read make the claims open: with API keys only,
// the claims are the keys' attributes, known now; with OAuth, any claim
// may come.
func authInfo(a *config.Auth, ft funcTables) *adapter.AuthInfo {
	if a == nil {
		return nil
	}
	info := &adapter.AuthInfo{APIKeys: len(a.APIKeys) > 0, OAuth: a.OAuth != nil, Range: a.DeclRange}
	ectx := &hcl.EvalContext{Functions: ft.get(a.Dir)}
	str := func(attr *hcl.Attribute) string {
		if attr == nil {
			return ""
		}
		v, d := attr.Expr.Value(ectx)
		if d.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type() != cty.String {
			return ""
		}
		return v.AsString()
	}
	info.Audience = str(a.Resource)
	if a.OAuth != nil {
		if aud := str(a.OAuth.Audience); aud != "" {
			info.Audience = aud
		}
	}
	info.Claims, info.OpenClaims = map[string]bool{}, a.OAuth != nil
	for _, k := range a.APIKeys {
		if k.Attributes == nil {
			continue
		}
		v, d := k.Attributes.Expr.Value(ectx)
		if d.HasErrors() || !v.IsWhollyKnown() {
			info.OpenClaims = true
			continue
		}
		v, _ = v.UnmarkDeep()
		addClaimPaths(info.Claims, "", v)
	}
	return info
}

func (ft funcTables) get(dir string) map[string]function.Function {
	t, ok := ft.tables[dir]
	if !ok {
		t = funcs.TableWith(dir, ft.opts)
		ft.tables[dir] = t
	}
	return t
}

// openState compiles the server's state block and opens its Store, or
// takes prev's over when the block is unchanged. The values its env() and
// file() calls read go to secrets: a Redis password is redacted like a
// backend's.
func (s *Snapshot) openState(cfg *config.Config, prev *Snapshot, secrets *redact.Set, checkOnly bool) hcl.Diagnostics {
	if cfg.Server == nil || cfg.Server.State == nil {
		return nil
	}
	sc := cfg.Server.State
	ectx := &hcl.EvalContext{Functions: funcs.TableWith(sc.Dir, funcs.Options{Secrets: secrets, UnsetEnvUnknown: cfg.UnsetEnvUnknown})}
	settings, diags := sharedstate.Compile(sc, s.Server.Name, ectx)
	if settings == nil || diags.HasErrors() || checkOnly {
		return diags
	}
	if prev != nil && prev.state != nil && prev.state.Settings().Fingerprint() == settings.Fingerprint() {
		s.state = prev.state
		return diags
	}
	s.state = sharedstate.Open(settings, slog.Default())
	return diags
}

// State returns the shared state of the server's state block, or nil when
// there is none: its users then keep their state in memory.
func (s *Snapshot) State() *sharedstate.Store { return s.state }

// closeBackends closes the backends s opened that keep is not using, and
// its shared-state store unless keep took it over.
func (s *Snapshot) closeBackends(keep *Snapshot) {
	if s.state != nil && (keep == nil || keep.state != s.state) {
		if err := s.state.Close(); err != nil {
			slog.Warn("closing shared state", "err", err)
		}
	}
	for key, lb := range s.backends {
		if keep != nil {
			if other, ok := keep.backends[key]; ok && other == lb {
				continue
			}
		}
		if err := lb.backend.Close(); err != nil {
			slog.Warn("closing backend", "backend", key, "err", err)
		}
	}
}

// Close releases every backend of a snapshot that is not being replaced by
// another (at shutdown).
func (s *Snapshot) Close() { s.closeBackends(nil) }

// Discard releases a snapshot that was built but will not be served: its
// backends are closed, except those it took over from prev, which is still
// serving.
func (s *Snapshot) Discard(prev *Snapshot) { s.closeBackends(prev) }

// Tool returns the tool named name.
func (s *Snapshot) Tool(name string) (*Tool, bool) {
	t, ok := s.tools[name]
	return t, ok
}

// Prompt returns the prompt named name.
func (s *Snapshot) Prompt(name string) (*Prompt, bool) {
	p, ok := s.prompts[name]
	return p, ok
}

// ReadResource reads a static resource or an instance of a template.
// Unknown URIs, and those the caller lacks the scopes for, report found ==
// false.
func (s *Snapshot) ReadResource(ctx context.Context, req *ReadRequest) (res *mcp.ReadResourceResult, found bool, err error) {
	// A resource the caller lacks the scopes for is not found, as an
	// unknown one is (see ToolFor).
	caller, uri, ts := req.Caller, req.URI, req.Toolset
	if r, ok := s.resources[uri]; ok && caller.HasScopes(r.scopes) && ts.HasResource(uri) {
		res, err = r.Read(ctx)
		return res, true, err
	}
	for _, t := range s.Templates {
		if !caller.HasScopes(t.scopes) || !ts.HasTemplate(t.Def.URITemplate) {
			continue
		}
		if args, ok, err := t.Bind(uri); ok {
			if err != nil {
				return nil, true, err
			}
			res, err = t.Read(ctx, uri, args)
			return res, true, err
		}
	}
	return nil, false, nil
}

// Complete answers completion/complete for prompt arguments and template
// variables: the config's own from their completions, a contributed one
// by its backend (forward.go). Unknown references complete
// to nothing. The caller has checked that req.Ref is visible.
func (s *Snapshot) Complete(ctx context.Context, req *adapter.CompleteRequest) *mcp.CompletionResultDetails {
	var candidates []string
	switch req.Ref.Type {
	case "ref/prompt":
		if p, ok := s.prompts[req.Ref.Name]; ok {
			if p.from != nil {
				return p.from.complete(ctx, req)
			}
			candidates = p.completions[req.Argument]
		}
	case "ref/resource":
		for _, t := range s.Templates {
			if t.Def.URITemplate == req.Ref.URI {
				if t.from != nil {
					return t.from.complete(ctx, req)
				}
				candidates = t.completions[req.Argument]
			}
		}
	}
	return complete(candidates, req.Value)
}

// Current holds the snapshot being served. Requests Acquire it for the
// length of a call that may use backends; a swap retires the old snapshot
// and closes its unused backends once its last call has finished.
type Current struct {
	p atomic.Pointer[Snapshot]
}

// Load returns the current snapshot for reading its (immutable) lists.
func (c *Current) Load() *Snapshot { return c.p.Load() }

// Acquire returns the current snapshot, counted as in use until Release.
func (c *Current) Acquire() *Snapshot {
	for {
		s := c.p.Load()
		if s.acquire() {
			return s
		}
		// Retired between the load and the acquire: the next load sees the
		// snapshot that replaced it.
	}
}

// Swap makes next current and retires the previous snapshot, returning it.
func (c *Current) Swap(next *Snapshot) *Snapshot {
	prev := c.p.Swap(next)
	if prev != nil {
		go prev.retire(next)
	}
	return prev
}

func (s *Snapshot) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired {
		return false
	}
	s.inflight++
	return true
}

// Release ends one use begun by Acquire.
func (s *Snapshot) Release() {
	s.mu.Lock()
	s.inflight--
	if s.retired && s.inflight == 0 {
		close(s.released)
	}
	s.mu.Unlock()
}

func (s *Snapshot) retire(next *Snapshot) {
	s.mu.Lock()
	s.retired = true
	if s.inflight == 0 {
		close(s.released)
	}
	s.mu.Unlock()
	<-s.released
	s.closeBackends(next)
}
