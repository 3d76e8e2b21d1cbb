// Package reload keeps a running server on the newest valid config: it
// watches the config files (and the files they read), and on a change loads
// and compiles the whole config anew beside the running one. A config with
// errors is reported and ignored, so the last good one keeps serving; a
// valid one is swapped in atomically and every client is told once what
// changed.
package reload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Notifier tells connected clients what changed. serve.Server implements it.
type Notifier interface {
	Notify(tools, prompts, resources bool)
	ResourceUpdated(ctx context.Context, uri string)
}

// Reloader reloads the config at Paths into Current.
type Reloader struct {
	Paths    []string
	Registry *adapter.Registry
	Current  *snapshot.Current
	Notifier Notifier
	Version  string
	Logger   *slog.Logger
	// Debounce coalesces a burst of file events (an editor's save, a
	// ConfigMap swap) into one reload.
	Debounce time.Duration
	// Poll, when positive, also checks the watched files this often, for
	// file systems where inotify does not fire (NFS, some container mounts).
	Poll time.Duration

	mu      sync.Mutex // serializes reloads
	status  Status
	watched watchSet
	trigger chan struct{}
	once    sync.Once
}

// Status is the outcome of the latest reload, for logs, health checks and
// metrics.
type Status struct {
	Reloads  int       // successful reloads since start
	Failures int       // reloads refused for errors
	LastOK   time.Time // when the running config was loaded
	// Err is the diagnostics of the latest reload when it failed, or ""
	// when the running config is the newest one.
	Err         string
	LastFailure time.Time // when a reload last failed
}

// Status returns the current status.
func (r *Reloader) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Init records the files of the first load, which the caller made and
// swapped into Current itself, so that watching starts from them.
func (r *Reloader) Init(l *engine.Loaded) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watched = newWatchSet(r.Paths, l.Files, l.Referenced)
	r.status.LastOK = time.Now()
}

// Trigger asks for a reload (e.g. on SIGHUP) without waiting for it.
func (r *Reloader) Trigger() {
	r.init()
	select {
	case r.trigger <- struct{}{}:
	default: // one is pending already
	}
}

func (r *Reloader) init() {
	r.once.Do(func() {
		r.trigger = make(chan struct{}, 1)
		if r.Logger == nil {
			r.Logger = slog.Default()
		}
		if r.Debounce <= 0 {
			r.Debounce = 50 * time.Millisecond
		}
	})
}

// Reload loads the config now. It returns an error when the config is
// invalid; the running config is then left as it was.
func (r *Reloader) Reload(ctx context.Context) error {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	prev := r.Current.Load()
	l := engine.Load(r.Paths, r.Registry, prev, r.Version)
	// Watch what the attempted config reads even when it is broken: fixing
	// it is a change to one of those files.
	if l.Files != nil {
		r.watched = newWatchSet(r.Paths, l.Files, l.Referenced)
	}
	if l.Snapshot == nil {
		var buf bytes.Buffer
		config.WriteDiagnostics(&buf, l.Diagnostics, l.Sources)
		r.status.Failures++
		r.status.LastFailure = time.Now()
		r.status.Err = strings.TrimSpace(buf.String())
		r.Logger.Error("config reload failed; still serving the last good config", "diagnostics", "\n"+r.status.Err)
		return errors.New("invalid config")
	}
	for _, d := range l.Diagnostics {
		r.Logger.Warn("config", "diagnostic", strings.TrimSpace(diagString(d, l.Sources)))
	}
	changes := snapshot.Compare(prev, l.Snapshot)
	r.Current.Swap(l.Snapshot)
	r.status.Reloads++
	r.status.LastOK = time.Now()
	r.status.Err = ""
	if changes.Empty() {
		r.Logger.Info("config reloaded; nothing clients see changed", "took", time.Since(start))
		return nil
	}
	r.Notifier.Notify(!changes.Tools.Empty(), !changes.Prompts.Empty(), !changes.Resources.Empty())
	for _, uri := range changes.Updated {
		r.Notifier.ResourceUpdated(ctx, uri)
	}
	r.Logger.Info("config reloaded",
		"took", time.Since(start),
		"tools", changes.Tools.String(),
		"prompts", changes.Prompts.String(),
		"resources", changes.Resources.String(),
		"updated", fmt.Sprint(changes.Updated))
	return nil
}

func diagString(d *hcl.Diagnostic, sources map[string][]byte) string {
	var buf bytes.Buffer
	config.WriteDiagnostics(&buf, hcl.Diagnostics{d}, sources)
	return buf.String()
}

// Run watches the config until ctx ends, reloading on every change (and on
// Trigger). It returns when ctx is done, or early if no watcher can be set up
// and polling is off.
func (r *Reloader) Run(ctx context.Context, watch bool) error {
	r.init()
	var events <-chan fsnotify.Event
	var errs <-chan error
	var w *fsnotify.Watcher
	if watch {
		var err error
		w, err = fsnotify.NewWatcher()
		if err != nil {
			if r.Poll <= 0 {
				return fmt.Errorf("watching config files: %w (use --poll)", err)
			}
			r.Logger.Warn("cannot watch config files; polling only", "err", err)
		} else {
			defer w.Close()
			events, errs = w.Events, w.Errors
		}
	}
	dirs := map[string]bool{}
	rewatch := func() {
		if w == nil {
			return
		}
		r.mu.Lock()
		want := r.watched.dirs()
		r.mu.Unlock()
		for d := range dirs {
			if !want[d] {
				_ = w.Remove(d)
				delete(dirs, d)
			}
		}
		for d := range want {
			if dirs[d] {
				continue
			}
			if err := w.Add(d); err != nil {
				r.Logger.Warn("cannot watch directory", "dir", d, "err", err)
				continue
			}
			dirs[d] = true
		}
	}
	rewatch()

	var pollC <-chan time.Time
	var lastSig string
	if r.Poll > 0 {
		t := time.NewTicker(r.Poll)
		defer t.Stop()
		pollC = t.C
		r.mu.Lock()
		lastSig = r.watched.signature()
		r.mu.Unlock()
	}
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	reload := func() {
		_ = r.Reload(ctx)
		rewatch()
		if r.Poll > 0 {
			r.mu.Lock()
			lastSig = r.watched.signature()
			r.mu.Unlock()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			r.mu.Lock()
			relevant := r.watched.relevant(ev.Name)
			r.mu.Unlock()
			if relevant {
				debounce.Reset(r.Debounce)
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			r.Logger.Warn("file watcher", "err", err)
		case <-debounce.C:
			reload()
		case <-r.trigger:
			reload()
		case <-pollC:
			r.mu.Lock()
			sig := r.watched.signature()
			r.mu.Unlock()
			if sig != lastSig {
				reload()
			}
		}
	}
}

// watchSet is what a reload watches: the config paths given (a directory
// counts with every *.hcl it may gain), the files read, and the directories
// holding them. Directories, not files, are watched, so that editors' atomic
// saves (write a temporary file, rename it over) and Kubernetes' ConfigMap
// updates (swap the ..data symlink) are seen.
type watchSet struct {
	configDirs map[string]bool // directories given as config paths
	files      map[string]bool // every file read, absolute
}

func newWatchSet(paths, files, referenced []string) watchSet {
	ws := watchSet{configDirs: map[string]bool{}, files: map[string]bool{}}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			ws.configDirs[abs(p)] = true
		} else {
			ws.files[abs(p)] = true
		}
	}
	for _, f := range append(slices.Clone(files), referenced...) {
		ws.files[abs(f)] = true
	}
	return ws
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	return a
}

func (ws watchSet) dirs() map[string]bool {
	out := map[string]bool{}
	for d := range ws.configDirs {
		out[d] = true
	}
	for f := range ws.files {
		out[filepath.Dir(f)] = true
	}
	return out
}

// relevant reports whether an event on name may change the config.
func (ws watchSet) relevant(name string) bool {
	name = abs(name)
	if ws.files[name] {
		return true
	}
	dir, base := filepath.Split(name)
	dir = filepath.Clean(dir)
	// Kubernetes swaps a ConfigMap's contents by renaming the ..data
	// symlink; the visible files are symlinks through it.
	if base == "..data" {
		return true
	}
	if ws.configDirs[dir] && strings.HasSuffix(base, ".hcl") && !strings.HasPrefix(base, ".") {
		return true
	}
	return false
}

// signature summarizes the watched files' state for polling.
func (ws watchSet) signature() string {
	var b strings.Builder
	var names []string
	for f := range ws.files {
		names = append(names, f)
	}
	for d := range ws.configDirs {
		if entries, err := os.ReadDir(d); err == nil {
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".hcl") && !strings.HasPrefix(e.Name(), ".") {
					names = append(names, filepath.Join(d, e.Name()))
				}
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil {
			fmt.Fprintf(&b, "%s missing\n", n)
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", n, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}
