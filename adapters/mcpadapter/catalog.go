package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalog is what the upstream listed last (its tools, resources,
// templates and prompts, as the gate admitted them), kept up to date as
// the upstream says its lists changed, and who to tell when they do (the
// snapshots that contribute them: Watch).
type catalog struct {
	cfg     *serverConfig
	log     *slog.Logger
	ctx     context.Context           // the upstream's, ended by Close
	gate    *admitter                 // admits each listing as it arrives (admit.go)
	session func() *mcp.ClientSession // the supervisor's, nil while down

	mu       sync.Mutex
	listing  listing
	listed   bool       // a listing succeeded at least once
	relists  relistings // one listing at a time, one more pending
	watchers map[int]func()
	nextW    int
}

// listing is what the upstream listed last.
type listing struct {
	tools     []*mcp.Tool
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

// current is the latest listing.
func (c *catalog) current() listing {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listing
}

// watch registers changed, called when the listing changes (notify).
func (c *catalog) watch(changed func()) (stop func()) {
	c.mu.Lock()
	id := c.nextW
	c.nextW++
	if c.watchers == nil {
		c.watchers = map[int]func(){}
	}
	c.watchers[id] = changed
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.watchers, id)
		c.mu.Unlock()
	}
}

// notify calls the watchers, outside c.mu.
func (c *catalog) notify() {
	c.mu.Lock()
	ws := make([]func(), 0, len(c.watchers))
	for _, w := range c.watchers {
		ws = append(ws, w)
	}
	c.mu.Unlock()
	for _, w := range ws {
		w()
	}
}

// Listing kinds, for relisting: what a list_changed was about.
const (
	listTools = 1 << iota
	listResources
	listPrompts
	listAll = listTools | listResources | listPrompts
)

// relistings coalesces an upstream's requests for listings: at most one
// listing runs, and at most one waits, holding every kind asked for since
// the running one began; and a listing starts relistInterval after the
// one before it at the soonest. An upstream that sends list_changed
// without end (100 a second, or 2,000 at once) costs two listings a
// second at most, not one per notification: the notifications that
// arrive while a listing runs or waits are all answered by the next one,
// which sees what they announced. The first change after a quiet
// interval is listed at once.
type relistings struct {
	mu      sync.Mutex
	pending int       // kinds asked for and not yet being listed
	running bool      // a listing goroutine is running
	last    time.Time // when the latest listing began
}

// relistInterval is the least time between the starts of two listings of
// one upstream.
const relistInterval = 500 * time.Millisecond

// relist asks for a listing of kinds (listTools...), on connecting and on
// the upstream's list_changed notifications; it does not wait for it.
func (c *catalog) relist(kinds int) {
	if c.cfg.expose == nil {
		return
	}
	r := &c.relists
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending |= kinds
	if r.running {
		return
	}
	r.running = true
	go c.relistLoop()
}

// relistLoop lists what is pending until nothing is.
func (c *catalog) relistLoop() {
	r := &c.relists
	for {
		r.mu.Lock()
		wait := relistInterval - time.Since(r.last)
		r.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
			}
		}
		r.mu.Lock()
		kinds := r.pending
		r.pending = 0
		if kinds == 0 || c.ctx.Err() != nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.last = time.Now()
		r.mu.Unlock()
		c.list(kinds)
	}
}

// list lists the upstream's tools (resources, prompts: kinds) again, and
// tells the watchers when a listing differs from the last one.
func (c *catalog) list(kinds int) error {
	e := c.cfg.expose
	cs, l := c.session(), c.current()
	if cs == nil {
		return errors.New("not connected")
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.connectTimeout)
	defer cancel()
	caps := &mcp.ServerCapabilities{}
	if r := cs.InitializeResult(); r != nil && r.Capabilities != nil {
		caps = r.Capabilities
	}
	next := l
	var err error
	// Each listing is admitted as it arrives (admit.go): an entry whose
	// identifiers would reach clients' screens with control characters
	// is dropped, and so is a tool whose schema validation could not
	// bound (drop.go); the others are kept.
	if kinds&listTools != 0 && caps.Tools != nil {
		if next.tools, err = collect(cs.Tools(ctx, nil)); err == nil {
			next.tools = c.gate.checkTools(c.gate.admitTools(next.tools), e)
		}
		sort.Slice(next.tools, func(i, j int) bool { return next.tools[i].Name < next.tools[j].Name })
	}
	if err == nil && e.resources && kinds&listResources != 0 && caps.Resources != nil {
		if next.resources, err = collect(cs.Resources(ctx, nil)); err == nil {
			next.resources = c.gate.admitResources(next.resources)
			if next.templates, err = collect(cs.ResourceTemplates(ctx, nil)); err == nil {
				next.templates = c.gate.admitTemplates(next.templates)
			}
		}
	}
	if err == nil && e.prompts && kinds&listPrompts != 0 && caps.Prompts != nil {
		if next.prompts, err = collect(cs.Prompts(ctx, nil)); err == nil {
			next.prompts = c.gate.admitPrompts(next.prompts)
		}
	}
	if err != nil {
		c.log.Warn("listing the upstream failed; keeping the last listing", "err", c.cfg.redact(err.Error()))
		return fmt.Errorf("listing upstream %s: %s", c.cfg.name, c.cfg.redact(err.Error()))
	}
	c.mu.Lock()
	same := c.listed && reflect.DeepEqual(c.listing, next)
	c.listing, c.listed = next, true
	c.mu.Unlock()
	if !same {
		c.log.Info("upstream listed", "tools", len(next.tools), "resources", len(next.resources), "templates", len(next.templates), "prompts", len(next.prompts))
		c.notify()
	}
	return nil
}

func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for x, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
