package testrun

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
)

// request is one request a mocked backend received.
type request struct {
	backend string
	method  string
	path    string
	query   url.Values
	header  http.Header
	body    []byte
	matched bool
}

func (r *request) String() string {
	s := r.method + " " + r.path
	if len(r.query) > 0 {
		s += "?" + r.query.Encode()
	}
	return s
}

// mockSet serves one test's mocks: one in-process HTTP server per mocked
// backend, all recording into one list in the order requests arrived.
type mockSet struct {
	servers map[string]*httptest.Server // by backend name

	mu       sync.Mutex
	mocks    []*mock
	used     []bool
	requests []*request
}

func startMocks(mocks []*mock) *mockSet {
	s := &mockSet{servers: map[string]*httptest.Server{}, mocks: mocks, used: make([]bool, len(mocks))}
	for _, m := range mocks {
		if _, ok := s.servers[m.backend]; ok {
			continue
		}
		backend := m.backend
		s.servers[backend] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.serve(backend, w, r)
		}))
	}
	return s
}

func (s *mockSet) close() {
	for _, srv := range s.servers {
		srv.Close()
	}
}

// serve answers with the first unused mock of backend whose method and path
// match (mocks are used in order); once all matching mocks are used, the
// last one answers again, so that a tool that retries or is called twice
// sees a stable answer.
func (s *mockSet) serve(backend string, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	req := &request{backend: backend, method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header.Clone(), body: body}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	chosen := -1
	for i, m := range s.mocks {
		if m.backend != backend || (m.method != "" && m.method != r.Method) || (m.path != "" && m.path != r.URL.Path) {
			continue
		}
		if !s.used[i] {
			chosen = i
			break
		}
		chosen = i // the last used one, unless an unused one follows
	}
	if chosen >= 0 {
		s.used[chosen] = true
		req.matched = true
	}
	s.mu.Unlock()
	if chosen < 0 {
		http.Error(w, fmt.Sprintf("mcpd test: no mock of %s matches %s %s", backend, r.Method, r.URL.Path), http.StatusNotImplemented)
		return
	}
	m := s.mocks[chosen]
	for k, v := range m.headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(m.status)
	w.Write(m.body)
}

func (s *mockSet) recorded() []*request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*request(nil), s.requests...)
}

// mockedConfig returns a copy of cfg whose mocked backends send their
// requests to the mock servers: the adapter that owns each one rewrites
// its block (adapter.Mocker). Only the backend list is copied; everything
// else is shared with cfg, which is not modified.
func mockedConfig(cfg *config.Config, reg *adapter.Registry, servers map[string]*httptest.Server) (*config.Config, error) {
	out := *cfg
	out.Backends = make([]*config.Backend, len(cfg.Backends))
	for i, b := range cfg.Backends {
		srv, ok := servers[b.Name]
		m := mocker(reg, b.Type)
		if !ok || m == nil {
			out.Backends[i] = b
			continue
		}
		body, err := m.MockBackend(&adapter.BackendBlock{
			Name: b.Name, Body: b.Body, Range: b.DeclRange,
			Scope: &adapter.Scope{Dir: b.Dir, Functions: funcs.Table(b.Dir)},
		}, srv.URL)
		if err != nil {
			return nil, err
		}
		nb := *b
		nb.Body = body
		out.Backends[i] = &nb
	}
	return &out, nil
}

// mocker is the adapter owning backend blocks of type typ when it can mock
// them, else nil.
func mocker(reg *adapter.Registry, typ string) adapter.Mocker {
	if reg == nil {
		return nil
	}
	ba, ok := reg.BackendAdapter(typ)
	if !ok {
		return nil
	}
	m, _ := ba.(adapter.Mocker)
	return m
}
