package serve

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bare returns opts for a server without the observe middleware: the code
// before metrics, tracing and draining, as a benchmark's baseline.
func Bare(opts Options) Options {
	opts.bare = true
	return opts
}

// Observe wraps next in the observe middleware of s.
func (s *Server) Observe(next mcp.MethodHandler) mcp.MethodHandler { return s.observe(next, "") }

// BudgetWaiters is the number of calls waiting for output budget.
func (s *Server) BudgetWaiters() int {
	if s.budget == nil {
		return 0
	}
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	return s.budget.waiters.Len()
}

// MethodLargeResult is what OnFastPath hears, besides the method, of a
// tool result written without being encoded whole (fastwrite.go).
const MethodLargeResult = methodLargeResult

// OnFastPath makes h, a handler of HTTPHandler, call f with the method of
// every request its stateless fast path serves, on /mcp and on the
// toolsets' paths.
func OnFastPath(h http.Handler, f func(method string)) {
	fr := h.(*front)
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.onFast = f
	for _, eras := range fr.eras {
		if eras.fast != nil {
			eras.fast.served = f
		}
		if lf, ok := eras.legacy.(*legacyFast); ok {
			lf.fp.served = f
		}
	}
}

// LegacyReady reports whether h, a handler of HTTPHandler, may serve the
// requests of the 2025-11-25 session sid on /mcp on its fast path
// (fastlegacy.go): the client's notifications/initialized has been handled.
func LegacyReady(h http.Handler, sid string) bool {
	lf, ok := h.(*front).root.legacy.(*legacyFast)
	if !ok {
		return false
	}
	ls := lf.lookup(sid)
	return ls != nil && ls.ready.Load()
}

// ResultBuffersReturned is how many lent result buffers (engine/resultbuf)
// the server of h, a handler of HTTPHandler, has been given back.
func ResultBuffersReturned(h http.Handler) int64 { return h.(*front).s.results.Returned() }
