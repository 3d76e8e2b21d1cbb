package httpadapter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

// seen is one request as the test server received it.
type seen struct {
	Method     string
	RequestURI string // the raw request-target: escaped path and query
	Host       string
	Header     http.Header
	Body       []byte
}

// server is an httptest server that records what it receives.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newServer(t testing.TB, fn http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, seen{r.Method, r.RequestURI, r.Host, r.Header.Clone(), body})
		s.mu.Unlock()
		if fn != nil {
			fn(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func (s *server) last(t testing.TB) seen {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		t.Fatalf("the server received no request")
	}
	return s.reqs[len(s.reqs)-1]
}

// compile compiles src (backend blocks and one http block) with SERVER
// replaced by the server's URL.
func compile(t testing.TB, src, serverURL string, params map[string]string) adapter.Handler {
	t.Helper()
	return adaptertest.MustCompile(t, New(), "http", adaptertest.Config{
		Src:    strings.ReplaceAll(src, "SERVER", serverURL),
		Params: params,
	})
}

func call(h adapter.Handler, params map[string]string, args map[string]any) (*adapter.Output, error) {
	return adaptertest.Call(context.Background(), h, params, args)
}

func jsonHandler(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}
