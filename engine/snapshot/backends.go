package snapshot

import (
	"sort"
	"strings"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Backends calls f with every live backend of the snapshot, in a stable
// order, with the type and name of the block that declared it. Operations
// code (metrics, readiness checks) finds what it needs through optional
// interfaces on the backends.
func (s *Snapshot) Backends(f func(blockType, name string, b adapter.Backend)) {
	keys := make([]string, 0, len(s.backends))
	for k := range s.backends {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		typ, name, _ := strings.Cut(k, " ")
		f(typ, name, s.backends[k].backend)
	}
}
