// Package lsp is `mcpd lsp`: a language server for mcpd's config files over
// stdio. Its diagnostics come from the loader `mcpd validate` uses, run
// over the whole directory of the edited file with the editor's unsaved
// buffers in place of the files on disk, so that they are the same
// file:line:col and text; completion and hover read the block schemas the
// loader and the adapters declare, and the reference text of docs.go.
//
// The protocol types and JSON-RPC framing are tliron/glsp's and
// sourcegraph/jsonrpc2's; this package holds only what is about mcpd.
package lsp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/tliron/glsp"
	protocol "github.com/tliron/glsp/protocol_3_16"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Debounce is how long the server waits after the last change of a
// directory's files before it loads the directory again: a load per
// keystroke would be wasted on text the author is still typing.
const Debounce = 250 * time.Millisecond

// Server is one language server session.
type Server struct {
	reg      *adapter.Registry
	version  string
	root     *blockSchema
	log      *slog.Logger
	debounce time.Duration

	mu      sync.Mutex
	docs    map[string][]byte         // open documents by file name
	timers  map[string]*time.Timer    // pending loads by directory
	results map[string]*dirResult     // last load by directory
	inputs  map[string]map[string]any // input schemas by directory and tool, from the last good load
	gen     map[string]int            // loads started, by directory
	conn    *jsonrpc2.Conn
	ctx     context.Context
	wg      sync.WaitGroup

	// shutdown is set by the shutdown request; exit is closed by the exit
	// notification, which ends Serve (see Serve).
	shutdown bool
	exit     chan struct{}
	exitOnce sync.Once
}

// ErrExitWithoutShutdown is Serve's error when the client sent exit
// without shutdown first: the LSP specification has the server exit with
// code 1 then, and 0 after a shutdown.
var ErrExitWithoutShutdown = errors.New("the client sent exit without shutdown")

// Options change a Server.
type Options struct {
	// Debounce overrides the package's Debounce when positive.
	Debounce time.Duration
	Logger   *slog.Logger
	// Version is mcpd's, for the initialize result's serverInfo.
	Version string
}

// New returns a server for configs compiled with reg's adapters.
func New(reg *adapter.Registry, opts Options) *Server {
	s := &Server{reg: reg, version: opts.Version, root: rootSchema(reg), log: opts.Logger, debounce: Debounce,
		exit: make(chan struct{}), docs: map[string][]byte{}, timers: map[string]*time.Timer{}, results: map[string]*dirResult{}, inputs: map[string]map[string]any{}, gen: map[string]int{}}
	if opts.Debounce > 0 {
		s.debounce = opts.Debounce
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Serve speaks LSP over rwc (stdin and stdout for `mcpd lsp`) until the
// client sends exit, disconnects, or ctx ends. After exit it returns nil
// if the client sent shutdown first and ErrExitWithoutShutdown if not; it
// does not wait for the client to close its end (an editor may keep the
// pipe open until the server's process ends).
func (s *Server) Serve(ctx context.Context, rwc io.ReadWriteCloser) error {
	h := s.handler()
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(rwc, jsonrpc2.VSCodeObjectCodec{}),
		jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (result any, err error) {
			// A bug in one feature must not end the editor's session.
			defer func() {
				if r := recover(); r != nil {
					s.log.Error("lsp: panic", "method", req.Method, "panic", r, "stack", string(debug.Stack()))
					result, err = nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: fmt.Sprintf("mcpd lsp: internal error in %s", req.Method)}
				}
			}()
			// shutdown and exit are the session's, not glsp's: glsp's
			// handler counts the session uninitialized after shutdown
			// and answers exit with "server not initialized" instead of
			// running it, so the server never ended.
			switch req.Method {
			case protocol.MethodShutdown:
				s.mu.Lock()
				s.shutdown = true
				s.mu.Unlock()
				return nil, nil
			case protocol.MethodExit:
				s.exitOnce.Do(func() { close(s.exit) })
				return nil, nil
			}
			s.mu.Lock()
			down := s.shutdown
			s.mu.Unlock()
			if down {
				if req.Notif {
					return nil, nil
				}
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: "the server is shut down: only exit is accepted"}
			}
			gc := &glsp.Context{Method: req.Method, Notify: func(method string, params any) { _ = c.Notify(ctx, method, params) }}
			if req.Params != nil {
				gc.Params = *req.Params
			}
			r, validMethod, validParams, err := h.Handle(gc)
			if err != nil && validMethod && validParams && err.Error() == "server not initialized" {
				return nil, &jsonrpc2.Error{Code: -32002, Message: err.Error()}
			}
			switch {
			case !validMethod:
				if req.Notif {
					return nil, nil
				}
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not supported: " + req.Method}
			case !validParams:
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: errText(err)}
			case err != nil:
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
			}
			return r, nil
		}))
	s.mu.Lock()
	s.conn, s.ctx = conn, ctx
	s.mu.Unlock()
	var err error
	select {
	case <-conn.DisconnectNotify():
	case <-ctx.Done():
		conn.Close()
	case <-s.exit:
		conn.Close()
		s.mu.Lock()
		if !s.shutdown {
			err = ErrExitWithoutShutdown
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	for dir, t := range s.timers {
		if t.Stop() {
			s.wg.Done()
		}
		delete(s.timers, dir)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func errText(err error) string {
	if err == nil {
		return "invalid params"
	}
	return err.Error()
}

func (s *Server) handler() *protocol.Handler {
	h := &protocol.Handler{}
	h.Initialize = func(_ *glsp.Context, _ *protocol.InitializeParams) (any, error) {
		caps := h.CreateServerCapabilities()
		full := protocol.TextDocumentSyncKindFull
		yes := true
		caps.TextDocumentSync = &protocol.TextDocumentSyncOptions{OpenClose: &yes, Change: &full, Save: &protocol.SaveOptions{}}
		caps.CompletionProvider = &protocol.CompletionOptions{TriggerCharacters: []string{".", "\""}}
		version := s.version
		return protocol.InitializeResult{Capabilities: caps, ServerInfo: &protocol.InitializeResultServerInfo{Name: "mcpd", Version: &version}}, nil
	}
	h.Initialized = func(*glsp.Context, *protocol.InitializedParams) error { return nil }
	h.SetTrace = func(*glsp.Context, *protocol.SetTraceParams) error { return nil }
	h.TextDocumentDidOpen = func(_ *glsp.Context, p *protocol.DidOpenTextDocumentParams) error {
		s.setDoc(p.TextDocument.URI, []byte(p.TextDocument.Text))
		return nil
	}
	h.TextDocumentDidChange = func(_ *glsp.Context, p *protocol.DidChangeTextDocumentParams) error {
		for _, ch := range p.ContentChanges {
			switch c := ch.(type) {
			case protocol.TextDocumentContentChangeEventWhole:
				s.setDoc(p.TextDocument.URI, []byte(c.Text))
			case protocol.TextDocumentContentChangeEvent:
				// Only sent by a client that ignored our Full sync kind;
				// apply it rather than lose the edit.
				s.mu.Lock()
				name := uriToPath(p.TextDocument.URI)
				src := s.docs[name]
				s.mu.Unlock()
				if c.Range != nil {
					src = applyEdit(src, *c.Range, c.Text)
					s.setDoc(p.TextDocument.URI, src)
				}
			}
		}
		return nil
	}
	h.TextDocumentDidSave = func(_ *glsp.Context, p *protocol.DidSaveTextDocumentParams) error {
		s.schedule(filepath.Dir(uriToPath(p.TextDocument.URI)))
		return nil
	}
	h.TextDocumentDidClose = func(_ *glsp.Context, p *protocol.DidCloseTextDocumentParams) error {
		name := uriToPath(p.TextDocument.URI)
		s.mu.Lock()
		delete(s.docs, name)
		s.mu.Unlock()
		s.schedule(filepath.Dir(name))
		return nil
	}
	h.TextDocumentCompletion = func(_ *glsp.Context, p *protocol.CompletionParams) (any, error) {
		return s.complete(uriToPath(p.TextDocument.URI), p.Position), nil
	}
	h.TextDocumentHover = func(_ *glsp.Context, p *protocol.HoverParams) (*protocol.Hover, error) {
		return s.hover(uriToPath(p.TextDocument.URI), p.Position), nil
	}
	h.TextDocumentDefinition = func(_ *glsp.Context, p *protocol.DefinitionParams) (any, error) {
		loc := s.definition(uriToPath(p.TextDocument.URI), p.Position)
		if loc == nil {
			return nil, nil
		}
		return loc, nil
	}
	h.TextDocumentFormatting = func(_ *glsp.Context, p *protocol.DocumentFormattingParams) ([]protocol.TextEdit, error) {
		return s.format(uriToPath(p.TextDocument.URI)), nil
	}
	h.TextDocumentCodeAction = func(_ *glsp.Context, p *protocol.CodeActionParams) (any, error) {
		return s.codeActions(uriToPath(p.TextDocument.URI), p.Range), nil
	}
	h.TextDocumentReferences = func(_ *glsp.Context, p *protocol.ReferenceParams) ([]protocol.Location, error) {
		return s.references(uriToPath(p.TextDocument.URI), p.Position, p.Context.IncludeDeclaration), nil
	}
	return h
}

// setDoc records a buffer and schedules its directory's load.
func (s *Server) setDoc(uri string, src []byte) {
	if !strings.HasPrefix(uri, "file:") {
		// An unsaved, unnamed buffer (untitled:) has no directory to load
		// with it; completion and hover still read it.
		s.mu.Lock()
		s.docs[uri] = src
		s.mu.Unlock()
		return
	}
	name := uriToPath(uri)
	s.mu.Lock()
	s.docs[name] = src
	s.mu.Unlock()
	s.schedule(filepath.Dir(name))
}

// source is the text of name: its buffer when open, else the file.
func (s *Server) source(name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.docs[name]
	return src, ok
}

func (s *Server) notify(method string, params any) {
	s.mu.Lock()
	c, ctx := s.conn, s.ctx
	s.mu.Unlock()
	if c == nil {
		return
	}
	if err := c.Notify(ctx, method, params); err != nil {
		s.log.Debug("lsp: notify failed", "method", method, "err", err)
	}
}

func uriToPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return uri
	}
	return filepath.Clean(u.Path)
}

func pathToURI(name string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(name)}).String()
}

// isConfig reports whether name is a file the loader reads from its
// directory.
func isConfig(name string) bool {
	base := filepath.Base(name)
	return strings.HasSuffix(base, ".hcl") && !strings.HasPrefix(base, ".")
}
