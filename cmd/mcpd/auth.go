package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/mcpd/mcpd/engine/auth"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// authFlags are serve's flags for securing the HTTP listener. Who may call
// is declared in the config's auth block (it reloads); the flags say how
// the listener runs.
type authFlags struct {
	insecureNoAuth  bool
	tlsCert, tlsKey string
}

func addAuthFlags(fs *flag.FlagSet) *authFlags {
	a := &authFlags{}
	fs.BoolVar(&a.insecureNoAuth, "insecure-no-auth", false, "serve a non-loopback address without an auth block (only behind a proxy that authenticates)")
	fs.StringVar(&a.tlsCert, "tls-cert", "", "serve HTTPS (and HTTP/2) with this PEM certificate chain; re-read when it changes")
	fs.StringVar(&a.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	return a
}

// listener checks that ln may serve without auth and wraps it in TLS
// when asked. It returns the URL scheme and whether every request needs
// auth (a non-loopback address without --insecure-no-auth).
func (a *authFlags) listener(ln net.Listener, current *snapshot.Current, logger *slog.Logger) (net.Listener, string, bool, error) {
	required := !a.insecureNoAuth && !loopbackListener(ln)
	if required && current.Load().Auth == nil {
		ln.Close()
		return nil, "", false, fmt.Errorf("refusing to serve %s without authentication: declare an auth block (see docs/security.md), or pass --insecure-no-auth (MCPD_INSECURE_NO_AUTH=1) if a proxy in front authenticates every request", ln.Addr())
	}
	if a.insecureNoAuth && current.Load().Auth == nil && !loopbackListener(ln) {
		logger.Warn("serving a non-loopback address without authentication (--insecure-no-auth): anyone who reaches it may call every tool", "addr", ln.Addr().String())
	}
	if (a.tlsCert == "") != (a.tlsKey == "") {
		ln.Close()
		return nil, "", false, errors.New("--tls-cert and --tls-key go together")
	}
	if a.tlsCert == "" {
		return ln, "http", required, nil
	}
	cf := &certFile{cert: a.tlsCert, key: a.tlsKey, logger: logger}
	if _, err := cf.get(nil); err != nil {
		ln.Close()
		return nil, "", false, err
	}
	cfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: cf.get,
		// h2 first: http.Server.Serve speaks HTTP/2 on *tls.Conn
		// connections that negotiated it.
		NextProtos: []string{"h2", "http/1.1"},
	}
	return tls.NewListener(ln, cfg), "https", required, nil
}

// loopbackListener reports whether ln accepts connections from this
// machine only.
func loopbackListener(ln net.Listener) bool {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// mountMCP mounts the MCP handler behind the auth middleware, and the
// Protected Resource Metadata.
func mountMCP(mux *http.ServeMux, mcp http.Handler, current *snapshot.Current, required bool, httpOpts serve.HTTPOptions, logger *slog.Logger) {
	cur := func() *auth.Config { return current.Load().Auth }
	mw := &auth.Middleware{Current: cur, Required: required, Logger: logger}
	mux.Handle("/mcp", mw.Wrap(mcp))
	// Each toolset on /mcp/<toolset>, behind the same authentication.
	mux.Handle("/mcp/", mw.Wrap(mcp))
	// The Server Cards (engine/serve/servercard.go) are public, as the
	// Protected Resource Metadata is: they say how to authenticate.
	mux.Handle("/mcp/server-card", mcp)
	mux.Handle("/mcp/{toolset}/server-card", mcp)
	prm := serve.HostGuard(httpOpts, auth.MetadataHandler(cur))
	for _, p := range auth.MetadataPaths() {
		mux.Handle(p, prm)
	}
}

// certFile serves a certificate read from files, re-read when their
// modification time changes (checked at most once a second), so that a
// renewed certificate (cert-manager, certbot) is served without a restart.
// A pair that does not load keeps the last good one.
type certFile struct {
	cert, key string
	logger    *slog.Logger

	mu              sync.Mutex
	current         *tls.Certificate
	certMod, keyMod time.Time
	checked         time.Time
}

func (f *certFile) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current != nil && time.Since(f.checked) < time.Second {
		return f.current, nil
	}
	f.checked = time.Now()
	cs, err1 := os.Stat(f.cert)
	ks, err2 := os.Stat(f.key)
	if err := errors.Join(err1, err2); err != nil {
		if f.current != nil {
			f.logger.Error("TLS certificate files unreadable; serving the last good certificate", "err", err)
			return f.current, nil
		}
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	if f.current != nil && cs.ModTime().Equal(f.certMod) && ks.ModTime().Equal(f.keyMod) {
		return f.current, nil
	}
	c, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		if f.current != nil {
			f.logger.Error("TLS certificate did not load; serving the last good certificate", "err", err)
			return f.current, nil
		}
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	if f.current != nil {
		f.logger.Info("TLS certificate reloaded", "file", f.cert)
	}
	f.current, f.certMod, f.keyMod = &c, cs.ModTime(), ks.ModTime()
	return f.current, nil
}
