package loader

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/lock"
)

// Served loads the config at paths without pinning, starts and lists
// every backend that contributes definitions at run time (adapter.Syncer:
// the mcp_server blocks with an expose block), and returns what would be
// served, for the lock file (`mcpd lock`), with the number of backends
// listed. The backends are closed before it returns. When the config does
// not load, the error is nil and Loaded holds the diagnostics.
//
// A variable env() reads that is not set is a warning, as for `mcpd
// validate`: the config's own definitions do not need the secrets their
// calls need, and an upstream that does cannot be listed, which is an
// error naming it.
func Served(ctx context.Context, paths []string, reg *adapter.Registry, version string) (defs []lock.Def, listed int, l *Loaded, err error) {
	first := LoadWith(paths, reg, nil, version, Options{NoPinning: true, UnsetEnvWarning: true, CheckOnly: true})
	if first.Snapshot == nil {
		return nil, 0, first, nil
	}
	snap := first.Snapshot
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	snap.Syncers(func(key string, b adapter.Syncer) {
		listed++
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Sync(ctx); err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("%s: %v", key, err))
				mu.Unlock()
			}
		}()
	})
	wg.Wait()
	if len(failed) > 0 {
		snap.Close()
		sort.Strings(failed)
		return nil, 0, first, fmt.Errorf("an upstream could not be listed, so its definitions cannot be compared:\n  %s", strings.Join(failed, "\n  "))
	}
	// A second build over the same backends sees what they listed.
	second := LoadWith(paths, reg, snap, version, Options{NoPinning: true, UnsetEnvWarning: true, CheckOnly: true})
	if second.Snapshot == nil {
		snap.Close()
		return nil, 0, second, nil
	}
	snap.Discard(second.Snapshot)
	defer second.Snapshot.Close()
	defs, err = second.Snapshot.LockDefs()
	return defs, listed, second, err
}
