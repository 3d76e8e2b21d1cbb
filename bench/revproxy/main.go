// Command revproxy is the gateway benchmark's reference hop: Go's
// net/http/httputil.ReverseProxy in front of an MCP server, forwarding
// every request as it is (bench/proxy-pair.sh; docs/performance.md,
// "The gateway's fast path"). A gateway that understands MCP does more
// than this hop; the benchmark asks how much more it costs.
//
//	revproxy -listen 127.0.0.1:8080 -upstream http://127.0.0.1:8081
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	upstream := flag.String("upstream", "", "the upstream's base URL (scheme://host:port)")
	flag.Parse()
	target, err := url.Parse(*upstream)
	if err != nil || target.Host == "" {
		log.Fatalf("revproxy: -upstream must be a URL such as http://127.0.0.1:8081 (got %q)", *upstream)
	}
	// The same connection pool as mcpd's upstreams (adapters/mcpadapter,
	// httpTransport): 16 calls in flight keep 16 connections.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport: t,
	}
	log.Fatal(http.ListenAndServe(*listen, proxy))
}
