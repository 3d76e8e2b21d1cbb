package snapshot

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/lock"
)

// Pinning: what a backend contributes at run time (an upstream's listed
// tools, prompts, resources and templates) is checked against the lock
// file (engine/lock) at every build, before it is compiled. A definition
// that differs from its locked digest, or that the lock does not hold, is
// handled by its block's policy (adapter.DriftPolicy):
//
//   - quarantine: it is left out of the snapshot, so it is hidden and
//     refused exactly as a name that does not exist, on every surface
//     (both eras, the fast paths, the console, mcpd list and call), until
//     the lock is updated (mcpd lock --approve, or the console);
//   - allow: it is served, and the change is logged and audited;
//   - refuse: nothing of that block is served (its contributions and the
//     config's tools that use it) until the lock is updated.
//
// A block is pinned when the lock file holds any of its definitions, or
// when it declares on_drift; otherwise it is served as listed, as before
// pinning existed. Every drift
// is kept in the snapshot (Drifts) for the console, and logged, counted
// and passed to the tracker's observer once per definition and digest.

// Policies of adapter.DriftPolicy.
const (
	PolicyQuarantine = "quarantine"
	PolicyAllow      = "allow"
	PolicyRefuse     = "refuse"
)

// Drift is one contributed definition that differs from the lock.
type Drift struct {
	lock.Change
	// Policy is what was done: PolicyQuarantine (hidden), PolicyAllow
	// (served) or PolicyRefuse (the whole block hidden).
	Policy string
	// Served is mcpd's name for it (a tool's prefixed or renamed name, a
	// resource's URI).
	Served string
}

// DriftCount is how many drifts of one source, kind and policy were seen
// since start (mcpd_definition_drift_total).
type DriftCount struct {
	Source, Kind, Policy string
	Count                int64
}

// pinTracker is carried from snapshot to snapshot: what was reported, the
// counts, and who is told.
type pinTracker struct {
	mu       sync.Mutex
	reported map[lock.Key]string // digest last reported per definition
	counts   map[[3]string]int64
	observer func(Drift)
	// memo holds the digests of the definitions of the latest build, by
	// the listing entry they were made from (an upstream's listing keeps
	// its entries between rebuilds), so that a rebuild that lists nothing
	// new digests nothing again.
	memo map[any]lock.Def
}

func newPinTracker() *pinTracker {
	return &pinTracker{reported: map[lock.Key]string{}, counts: map[[3]string]int64{}, memo: map[any]lock.Def{}}
}

// OnDrift sets the function told of each drift (once per definition and
// digest, from the build that found it): the audit log's record of an
// allowed change. It is carried over by every reload.
func (s *Snapshot) OnDrift(fn func(Drift)) {
	if s.pins == nil {
		return
	}
	s.pins.mu.Lock()
	s.pins.observer = fn
	s.pins.mu.Unlock()
}

// Drifts lists the contributed definitions of this snapshot that differ
// from the lock, with what was done with each, in the lock's order.
func (s *Snapshot) Drifts() []Drift { return s.drifts }

// LockPath is the lock file this snapshot was checked against ("" when
// nothing is pinned).
func (s *Snapshot) LockPath() string { return s.lockPath }

// DriftCounts returns the drift counters since start.
func (s *Snapshot) DriftCounts() []DriftCount {
	if s.pins == nil {
		return nil
	}
	s.pins.mu.Lock()
	defer s.pins.mu.Unlock()
	out := make([]DriftCount, 0, len(s.pins.counts))
	for k, n := range s.pins.counts {
		out = append(out, DriftCount{Source: k[0], Kind: k[1], Policy: k[2], Count: n})
	}
	return out
}

// lockSource is the lock's source of a contributor key ("mcp_server
// everything" → "mcp_server.everything").
func lockSource(key string) string { return strings.Replace(key, " ", ".", 1) }

// pinGate is one build's verdicts: which contributed definitions are left
// out, and which blocks are refused.
type pinGate struct {
	hidden  map[lock.Key]bool
	refused map[string]bool // contributor keys
}

func (g *pinGate) hides(key, kind, name string) bool {
	if g == nil {
		return false
	}
	return g.refused[key] || g.hidden[lock.Key{Source: lockSource(key), Kind: kind, Name: name}]
}

// checkPins checks every pinned contributor's definitions against the
// lock, records the drifts and returns the verdicts.
func (s *Snapshot) checkPins(prev *Snapshot, opts BuildOptions) *pinGate {
	if prev != nil && prev.pins != nil {
		s.pins = prev.pins
	} else {
		s.pins = newPinTracker()
	}
	if opts.NoPinning {
		return nil
	}
	s.lockPath = opts.LockPath
	g := &pinGate{hidden: map[lock.Key]bool{}, refused: map[string]bool{}}
	memo := map[any]lock.Def{}
	s.pins.mu.Lock()
	old := s.pins.memo
	s.pins.mu.Unlock()
	def := func(source, kind, name string, v any, nameField string) (lock.Def, bool) {
		key, memoized := memoKey(v)
		if memoized {
			if d, ok := old[key]; ok && d.Name == name && d.Source == source {
				memo[key] = d
				return d, true
			}
		}
		d, err := lock.NewDef(source, kind, name, v, nameField)
		if err != nil {
			slog.Warn("contributed definition cannot be pinned; left out", "source", source, "err", err)
			return d, false
		}
		if memoized {
			memo[key] = d
		}
		return d, true
	}
	drifting := map[lock.Key]bool{}
	for _, c := range s.contributors {
		dp, ok := c.conf.(adapter.DriftPolicy)
		if !ok {
			continue
		}
		policy, declared := dp.OnDrift()
		source := lockSource(c.key)
		// A block the lock holds nothing of (no lock, or one written
		// before the block was added) is pinned only when it asks to be:
		// `mcpd lock --check` reports its definitions as new.
		if !declared && !opts.Lock.HasSource(source) {
			continue
		}
		lb, ok := s.backends[c.key]
		if !ok {
			continue
		}
		var drifts []Drift
		for _, e := range contributedEntries(c, lb.backend) {
			d, ok := def(source, e.kind, e.name, e.v, e.nameField)
			if !ok {
				g.hidden[lock.Key{Source: source, Kind: e.kind, Name: e.name}] = true
				continue
			}
			if ch, same := lock.Check(opts.Lock, &d); !same {
				drifts = append(drifts, Drift{Change: ch, Policy: policy, Served: e.served})
				if policy != PolicyAllow {
					g.hidden[d.Key()] = true
				}
			}
		}
		if len(drifts) > 0 && policy == PolicyRefuse {
			g.refused[c.key] = true
		}
		for _, d := range drifts {
			drifting[d.Key] = true
		}
		s.drifts = append(s.drifts, drifts...)
	}
	s.pins.mu.Lock()
	s.pins.memo = memo
	var report []Drift
	for _, d := range s.drifts {
		digest := ""
		if d.Now != nil {
			digest = d.Now.Digest
		}
		if s.pins.reported[d.Key] == digest {
			continue
		}
		s.pins.reported[d.Key] = digest
		s.pins.counts[[3]string{d.Key.Source, d.Key.Kind, d.Policy}]++
		report = append(report, d)
	}
	for k := range s.pins.reported {
		if !drifting[k] {
			delete(s.pins.reported, k) // approved, or gone: a new drift is new again
		}
	}
	observer := s.pins.observer
	s.pins.mu.Unlock()
	for _, d := range report {
		slog.Warn("upstream definition differs from the lock file", "source", d.Key.Source, "kind", d.Key.Kind, "name", d.Key.Name,
			"served_as", d.Served, "status", d.Status, "policy", d.Policy, "what", driftFields(d.Change), "lock", opts.LockPath)
		if observer != nil {
			observer(d)
		}
	}
	return g
}

// memoKey is the key under which v's digest is remembered between builds:
// the listing entry itself, which a backend keeps until it lists again.
func memoKey(v any) (any, bool) {
	switch v.(type) {
	case *mcp.Tool, *mcp.Prompt, *mcp.Resource, *mcp.ResourceTemplate:
		return v, true
	}
	return nil, false
}

// entry is one contributed definition as its backend declared it.
type entry struct {
	kind, name, served string
	v                  any    // the definition
	nameField          string // its key's field, left out of the pinned definition
}

// contributedEntries lists what c's backend b contributes now.
func contributedEntries(c contributor, b adapter.Backend) []entry {
	var out []entry
	if tc, ok := c.conf.(adapter.ToolContributor); ok {
		for _, ct := range tc.ContributedTools(b) {
			if ct.Declared != nil {
				out = append(out, entry{lock.KindTool, ct.Declared.Name, ct.Name, ct.Declared, "name"})
			} else {
				out = append(out, entry{lock.KindTool, ct.Name, ct.Name, servedTool(ct), "name"})
			}
		}
	}
	if rc, ok := c.conf.(adapter.ResourceContributor); ok {
		rs, ts := rc.ContributedResources(b)
		for _, r := range rs {
			out = append(out, entry{lock.KindResource, r.Def.URI, r.Def.URI, r.Def, "uri"})
		}
		for _, t := range ts {
			out = append(out, entry{lock.KindTemplate, t.Def.URITemplate, t.Def.URITemplate, t.Def, "uriTemplate"})
		}
	}
	if pc, ok := c.conf.(adapter.PromptContributor); ok {
		for _, cp := range pc.ContributedPrompts(b) {
			p := cp.Declared
			if p == nil {
				p = cp.Def
			}
			out = append(out, entry{lock.KindPrompt, p.Name, cp.Def.Name, p, "name"})
		}
	}
	return out
}

// LockDefs are the definitions this snapshot serves, for the lock file:
// the config's own tools, resources, templates and prompts as served, and
// what each contributing backend declares now, as it declared it (before
// any prefix, rename or description of the config's, and whether or not
// the lock quarantines it).
func (s *Snapshot) LockDefs() ([]lock.Def, error) {
	var out []lock.Def
	add := func(kind, name string, v any, nameField string) error {
		d, err := lock.NewDef(lock.SourceConfig, kind, name, v, nameField)
		out = append(out, d)
		return err
	}
	for _, t := range s.Tools {
		if t.adapterType == "contributed" {
			continue
		}
		if err := add(lock.KindTool, t.Def.Name, t.Def, "name"); err != nil {
			return nil, err
		}
	}
	for _, r := range s.Resources {
		if r.from == nil {
			if err := add(lock.KindResource, r.Def.URI, r.Def, "uri"); err != nil {
				return nil, err
			}
		}
	}
	for _, t := range s.Templates {
		if t.from == nil {
			if err := add(lock.KindTemplate, t.Def.URITemplate, t.Def, "uriTemplate"); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range s.Prompts {
		if p.from == nil {
			if err := add(lock.KindPrompt, p.Def.Name, p.Def, "name"); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range s.contributors {
		lb, ok := s.backends[c.key]
		if !ok {
			continue
		}
		for _, e := range contributedEntries(c, lb.backend) {
			d, err := lock.NewDef(lockSource(c.key), e.kind, e.name, e.v, e.nameField)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// Pinned reports whether the snapshot checks any contributor against a
// lock: one exists, or a block declares its policy.
func (s *Snapshot) Pinned() bool { return s.lockPath != "" }

// Syncers calls fn for each live backend that can be asked to list what
// it contributes now (adapter.Syncer), with its "TYPE NAME".
func (s *Snapshot) Syncers(fn func(key string, b adapter.Syncer)) {
	for _, c := range s.contributors {
		if lb, ok := s.backends[c.key]; ok {
			if sy, ok := lb.backend.(adapter.Syncer); ok {
				fn(c.key, sy)
			}
		}
	}
}

// driftFields names what changed, for the log.
func driftFields(c lock.Change) string {
	if c.Status != lock.Changed {
		return c.Status
	}
	var paths []string
	for _, f := range c.Fields {
		paths = append(paths, f.Path)
	}
	return strings.Join(paths, ", ")
}

// servedTool is a contributed tool without a Declared definition, as it is
// served.
func servedTool(ct adapter.ContributedTool) map[string]any {
	m := map[string]any{"name": ct.Name, "description": ct.Description, "inputSchema": ct.InputSchema}
	if ct.Title != "" {
		m["title"] = ct.Title
	}
	if ct.OutputSchema != nil {
		m["outputSchema"] = ct.OutputSchema
	}
	if ct.Annotations != nil {
		m["annotations"] = ct.Annotations
	}
	return m
}

// hideRefused removes the config's own tools that use a refused block.
func (s *Snapshot) hideRefused(g *pinGate) {
	if g == nil || len(g.refused) == 0 {
		return
	}
	kept := s.Tools[:0]
	for _, t := range s.Tools {
		refused := false
		for _, b := range t.backends {
			refused = refused || g.refused[b]
		}
		if refused {
			delete(s.tools, t.Def.Name)
			continue
		}
		kept = append(kept, t)
	}
	s.Tools = kept
}
