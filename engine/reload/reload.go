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

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Notifier tells connected clients what changed. serve.Server implements it.
// A reload calls it while holding its lock, so its methods must not wait for
// clients: serve.Server queues the notifications and returns.
type Notifier interface {
	Notify(tools, prompts, resources bool)
	ResourceUpdated(ctx context.Context, uri string)
	// Reloaded is called after every swap, whether or not clients see a
	// change: what the server holds at backends for its clients (resource
	// subscriptions) follows the snapshot now served, whose backends may
	// not be the last one's.
	Reloaded()
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
	// EmptySettle is how long a config file that had content must stay
	// empty before a config without it is served (default 10s): a file
	// rewritten in place (`generator > tools.hcl`) is empty until the writer
	// writes, and serving it then would take every tool it declares away.
	EmptySettle time.Duration
	// OnStatus, when not nil, gets the status after every change to it
	// (the first load, each reload, each one held back). It is called with
	// the reload lock held, so it must return at once and must not call
	// Status.
	OnStatus func(Status)

	mu      sync.Mutex // serializes reloads
	status  Status
	watched watchSet
	// hadContent marks the config files that were not empty in the running
	// config.
	hadContent map[string]bool
	// retryAt, when not zero, is when Run should try again a reload that
	// was held back (a file emptied, or changed while it was read).
	retryAt time.Time
	trigger chan struct{}
	once    sync.Once
	// watching are the backends of the served snapshot that change at run
	// time (adapter.Watcher), each with the function that stops watching it.
	watching map[adapter.Backend]func()
}

// ErrHeld is returned by Reload when the config loaded but was not served
// yet, because a file is still being written: one changed while it was read,
// or one that had content is empty and has not been for EmptySettle. Run
// tries again by itself.
var ErrHeld = errors.New("config held back: a file is still being written")

// Status is the outcome of the latest reload, for logs, health checks and
// metrics.
type Status struct {
	Reloads  int       // successful reloads since start
	Failures int       // reloads refused for errors
	LastOK   time.Time // when the running config was loaded
	// Err is the diagnostics of the latest reload when it failed, or ""
	// when the running config is the newest one.
	Err string
	// Held counts reloads held back (see ErrHeld); Pending says why the
	// latest one was, while it is not yet retried ("" otherwise). A held
	// reload is not a failure: nothing is wrong with the config yet.
	Held        int
	Pending     string
	LastFailure time.Time // when a reload last failed
	// Files are the config files of the running config.
	Files []string
	// Diagnostics are Err's diagnostics, one by one, each with its file,
	// line, column and source line.
	Diagnostics []config.JSONDiagnostic
}

// Status returns the current status.
func (r *Reloader) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Init records the files of the first load, which the caller made and
// swapped into Current itself, so that watching starts from them.
func (r *Reloader) Init(l *loader.Loaded) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watched = newWatchSet(r.Paths, l.Files, l.Referenced)
	r.hadContent = contentful(l)
	r.status.LastOK = time.Now()
	r.status.Files = l.Files
	r.statusChanged()
	r.watchBackends()
}

// watchBackends makes every backend of the served snapshot that changes at
// run time (adapter.Watcher: an MCP upstream whose tool list changed)
// trigger a rebuild through Reload, so that the swap and the one
// list_changed per client are those of any reload; backends no longer
// served are let go. The caller holds r.mu.
func (r *Reloader) watchBackends() {
	r.init()
	if r.watching == nil {
		r.watching = map[adapter.Backend]func(){}
	}
	seen := map[adapter.Backend]bool{}
	r.Current.Load().Backends(func(_, _ string, b adapter.Backend) {
		w, ok := b.(adapter.Watcher)
		if !ok {
			return
		}
		seen[b] = true
		if _, ok := r.watching[b]; !ok {
			r.watching[b] = w.Watch(r.backendChanged)
		}
	})
	for b, stop := range r.watching {
		if !seen[b] {
			stop()
			delete(r.watching, b)
		}
	}
}

// backendChanged asks for a rebuild when a watched backend reports that
// what it contributes changed.
func (r *Reloader) backendChanged() {
	select {
	case r.trigger <- struct{}{}:
	default: // one is pending already
	}
}

// statusChanged tells OnStatus. The caller holds r.mu.
func (r *Reloader) statusChanged() {
	if r.OnStatus != nil {
		r.OnStatus(r.status)
	}
}

// contentful marks the config files of l that are not empty.
func contentful(l *loader.Loaded) map[string]bool {
	m := map[string]bool{}
	for _, f := range l.Files {
		if len(bytes.TrimSpace(l.Sources[f])) > 0 {
			m[f] = true
		}
	}
	return m
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
		if r.EmptySettle <= 0 {
			r.EmptySettle = 10 * time.Second
		}
	})
}

// Reload loads the config now. It returns an error when the config is
// invalid, or ErrHeld when a file is still being written; the running config
// is then left as it was.
func (r *Reloader) Reload(ctx context.Context) error {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	// Every way out of a reload changes the status (a count, a time).
	defer r.statusChanged()
	start := time.Now()
	r.retryAt = time.Time{}
	prev := r.Current.Load()
	before := r.watched.stat()
	l := loader.Load(r.Paths, r.Registry, prev, r.Version)
	// Watch what the attempted config reads even when it is broken: fixing
	// it is a change to one of those files.
	if l.Files != nil {
		r.watched = newWatchSet(r.Paths, l.Files, l.Referenced)
	}
	// A file that changed while it was read may have been read half
	// written: whatever was read, wait for the writer and read it again.
	if f, ok := changedDuring(before, r.watched.stat()); ok {
		return r.hold(l, prev, r.Debounce, fmt.Sprintf("%s changed while it was read; reading it again", f), slog.LevelInfo)
	}
	if l.Snapshot == nil {
		var buf bytes.Buffer
		config.WriteDiagnostics(&buf, l.Diagnostics, l.Sources)
		r.status.Failures++
		r.status.Pending = ""
		r.status.LastFailure = time.Now()
		r.status.Err = strings.TrimSpace(buf.String())
		r.status.Diagnostics = config.SourcedDiagnostics(l.Diagnostics, l.Sources)
		r.Logger.Error("config reload failed; still serving the last good config", "diagnostics", "\n"+r.status.Err)
		return errors.New("invalid config")
	}
	if f, wait := r.emptied(l); f != "" {
		if wait > 0 {
			return r.hold(l, prev, wait, fmt.Sprintf("%s is empty; still serving what it declared until it has stayed empty for %s (a writer may be rewriting it in place)", f, r.EmptySettle), slog.LevelWarn)
		}
		r.Logger.Warn("config file is empty and has stayed so: serving the config without what it declared", "file", f, "empty_for_at_least", r.EmptySettle)
	}
	for _, d := range l.Diagnostics {
		r.Logger.Warn("config", "diagnostic", strings.TrimSpace(diagString(d, l.Sources)))
	}
	changes := snapshot.Compare(prev, l.Snapshot)
	r.Current.Swap(l.Snapshot)
	r.watchBackends()
	r.Notifier.Reloaded()
	r.hadContent = contentful(l)
	r.status.Reloads++
	r.status.LastOK = time.Now()
	r.status.Err = ""
	r.status.Diagnostics = nil
	r.status.Files = l.Files
	r.status.Pending = ""
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
		"updated", fmt.Sprint(changes.Updated),
		"toolsets", fmt.Sprint(changes.Toolsets))
	return nil
}

// hold refuses a loaded config for now: Run tries again after wait.
func (r *Reloader) hold(l *loader.Loaded, prev *snapshot.Snapshot, wait time.Duration, why string, level slog.Level) error {
	if l.Snapshot != nil {
		l.Snapshot.Discard(prev)
	}
	r.status.Held++
	r.status.Pending = why
	r.retryAt = time.Now().Add(wait)
	r.Logger.Log(context.Background(), level, "config reload held back", "reason", why, "retry_in", wait)
	return ErrHeld
}

// emptied returns a config file of l that is empty now but had content in
// the running config, and how much longer it must stay empty before a config
// without its content is served (0: it has been empty long enough).
func (r *Reloader) emptied(l *loader.Loaded) (string, time.Duration) {
	var file string
	var wait time.Duration
	for _, f := range l.Files {
		if !r.hadContent[f] || len(bytes.TrimSpace(l.Sources[f])) > 0 {
			continue
		}
		// The file's modification time is when it was emptied (truncating a
		// file sets it), or later.
		left := r.EmptySettle
		if fi, err := os.Stat(f); err == nil {
			if since := time.Since(fi.ModTime()); since > 0 {
				left -= since
			}
		}
		if file == "" || left > wait {
			file, wait = f, left
		}
	}
	if wait < 0 {
		wait = 0
	}
	return file, wait
}

// retryIn is how long until a held reload should be tried again, or 0.
func (r *Reloader) retryIn() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.retryAt.IsZero() {
		return 0
	}
	return max(time.Until(r.retryAt), time.Millisecond)
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
	// retry fires when a reload put off (files still being written) or held
	// back (see ErrHeld) is due again.
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	reload := func() {
		// Wait until no watched file has been written for the debounce: with
		// polling, or on SIGHUP, the writer may not be done.
		r.mu.Lock()
		wait := r.watched.settling(r.Debounce)
		r.mu.Unlock()
		if wait > 0 {
			retry.Reset(wait)
			return
		}
		_ = r.Reload(ctx)
		rewatch()
		if r.Poll > 0 {
			r.mu.Lock()
			lastSig = r.watched.signature()
			r.mu.Unlock()
		}
		if wait := r.retryIn(); wait > 0 {
			retry.Reset(wait)
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
		case <-retry.C:
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
	// Test files (*_test.hcl) are not part of the config: editing one
	// while tests are written must not reload the server.
	if ws.configDirs[dir] && strings.HasSuffix(base, ".hcl") && !strings.HasPrefix(base, ".") && !config.IsTestFile(base) {
		return true
	}
	return false
}

// names lists the files a reload reads or may read: the files read last
// time, and the *.hcl files now in the config directories.
func (ws watchSet) names() []string {
	var names []string
	for f := range ws.files {
		names = append(names, f)
	}
	for d := range ws.configDirs {
		if entries, err := os.ReadDir(d); err == nil {
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".hcl") && !strings.HasPrefix(e.Name(), ".") && !config.IsTestFile(e.Name()) {
					names = append(names, filepath.Join(d, e.Name()))
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// fileState is what a stat tells of a file's contents without reading it.
type fileState struct {
	exists bool
	size   int64
	mtime  time.Time
}

// stat returns the state of every file of ws (symbolic links followed).
func (ws watchSet) stat() map[string]fileState {
	m := map[string]fileState{}
	for _, n := range ws.names() {
		if fi, err := os.Stat(n); err == nil {
			m[n] = fileState{exists: true, size: fi.Size(), mtime: fi.ModTime()}
		} else {
			m[n] = fileState{}
		}
	}
	return m
}

// changedDuring returns a file whose state differs between two stats of the
// same file, taken before and after it was read.
func changedDuring(before, after map[string]fileState) (string, bool) {
	for n, a := range after {
		if b, ok := before[n]; ok && b != a {
			return n, true
		}
	}
	return "", false
}

// settling returns how long until every watched file has been left alone
// for settle: a writer that writes in several steps (`generator >
// tools.hcl`) is then likely done. A modification time in the future
// (another machine's clock) does not count.
func (ws watchSet) settling(settle time.Duration) time.Duration {
	now := time.Now()
	var wait time.Duration
	for _, st := range ws.stat() {
		if !st.exists || st.mtime.After(now) {
			continue
		}
		wait = max(wait, settle-now.Sub(st.mtime))
	}
	return wait
}

// signature summarizes the watched files' state for polling.
func (ws watchSet) signature() string {
	var b strings.Builder
	st := ws.stat()
	for _, n := range ws.names() {
		s := st[n]
		if !s.exists {
			fmt.Fprintf(&b, "%s missing\n", n)
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", n, s.size, s.mtime.UnixNano())
	}
	return b.String()
}
