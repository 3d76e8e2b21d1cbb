package httpadapter

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

const backendSrc = `
http_backend "api" {
  base_url = "SERVER"
}
`

func TestResponses(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	tests := []struct {
		name       string
		ctype      string
		status     int
		body       []byte
		structured map[string]any
		text       string
		varBody    any
		media      string
	}{
		{
			name: "json object", ctype: "application/json; charset=utf-8", body: []byte("{\n  \"login\": \"octo\",\n  \"id\": 1\n}"),
			structured: map[string]any{"login": "octo", "id": float64(1)},
			text:       `{"login":"octo","id":1}`,
			varBody:    map[string]any{"login": "octo", "id": float64(1)},
		},
		{
			name: "json array", ctype: "application/json", body: []byte(`[1, "two"]`),
			structured: map[string]any{"items": []any{float64(1), "two"}},
			text:       `[1,"two"]`,
			varBody:    []any{float64(1), "two"},
		},
		{
			name: "json scalar", ctype: "application/json", body: []byte(`"hello"`),
			structured: map[string]any{"value": "hello"},
			text:       `"hello"`,
			varBody:    "hello",
		},
		{
			name: "vendor json", ctype: "application/vnd.github+json", body: []byte(`{"a":true}`),
			structured: map[string]any{"a": true}, text: `{"a":true}`, varBody: map[string]any{"a": true},
		},
		{
			name: "json sniffed from text/plain", ctype: "text/plain", body: []byte(` {"sniffed": 1}`),
			structured: map[string]any{"sniffed": float64(1)}, text: `{"sniffed":1}`, varBody: map[string]any{"sniffed": float64(1)},
		},
		{
			name: "plain text", ctype: "text/plain; charset=utf-8", body: []byte("hello, world ü"),
			text: "hello, world ü", varBody: "hello, world ü",
		},
		{
			name: "text that is not json", ctype: "text/plain", body: []byte("{not json"),
			text: "{not json", varBody: "{not json",
		},
		{
			name: "html is not sniffed", ctype: "text/html", body: []byte(`{"x":1}`),
			text: `{"x":1}`, varBody: `{"x":1}`,
		},
		{
			name: "invalid json with json type is text", ctype: "application/json", body: []byte(`{"x":`),
			text: `{"x":`, varBody: `{"x":`,
		},
		{
			name: "image", ctype: "image/png", body: png, media: "image/png",
		},
		{
			name: "audio", ctype: "audio/mpeg", body: []byte{0xff, 0xfb, 0x90, 0x00}, media: "audio/mpeg",
		},
		{
			name: "binary", ctype: "application/octet-stream", body: []byte{0xff, 0xfe, 0x00, 0x01},
			text: "[binary response omitted: application/octet-stream, 4 bytes]",
		},
		{
			name: "no content", status: http.StatusNoContent,
			text: "204 No Content",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.Header().Set("X-Rate-Limit", "42")
				w.Header().Add("X-Multi", "first")
				w.Header().Add("X-Multi", "second")
				status := tc.status
				if status == 0 {
					status = 200
				}
				w.WriteHeader(status)
				w.Write(tc.body)
			})
			h := compile(t, backendSrc+`http { 
  backend = "api"
  path = "/thing"
}`, srv.URL, nil)
			out, err := call(h, nil, nil)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if !reflect.DeepEqual(out.Structured, tc.structured) {
				t.Errorf("Structured = %#v, want %#v", out.Structured, tc.structured)
			}
			if out.Text != tc.text {
				t.Errorf("Text = %q, want %q", out.Text, tc.text)
			}
			if !reflect.DeepEqual(out.Vars["body"], tc.varBody) {
				t.Errorf("Vars[body] = %#v, want %#v", out.Vars["body"], tc.varBody)
			}
			wantStatus := tc.status
			if wantStatus == 0 {
				wantStatus = 200
			}
			if out.Vars["status"] != wantStatus {
				t.Errorf("Vars[status] = %#v, want %d", out.Vars["status"], wantStatus)
			}
			hdrs := out.Vars["headers"].(map[string]string)
			if hdrs["x-rate-limit"] != "42" || hdrs["x-multi"] != "first" {
				t.Errorf("Vars[headers] = %v, want lower-case names with first values", hdrs)
			}
			if out.Vars["truncated"] != false {
				t.Errorf("Vars[truncated] = %v, want false", out.Vars["truncated"])
			}
			if tc.media != "" {
				if len(out.Media) != 1 || out.Media[0].MIMEType != tc.media || !bytes.Equal(out.Media[0].Data, tc.body) {
					t.Errorf("Media = %+v, want one %s of %d bytes", out.Media, tc.media, len(tc.body))
				}
			} else if len(out.Media) != 0 {
				t.Errorf("Media = %+v, want none", out.Media)
			}
			for _, v := range h.Vars() {
				if _, ok := out.Vars[v]; !ok {
					t.Errorf("Vars lacks %q, which Handler.Vars declares", v)
				}
			}
		})
	}
}

func TestErrorStatus(t *testing.T) {
	long := strings.Repeat("x", 2000)
	tests := []struct {
		name    string
		status  int
		body    string
		expect  string // expect_status attribute, if any
		wantErr []string
		notErr  []string
	}{
		{
			name: "404 with json", status: 404, body: `{"message": "Not Found",
  "documentation_url": "https://docs"}`,
			wantErr: []string{"GET ", "/users/nobody returned 404 Not Found, expected a 2xx status", `{"message":"Not Found","documentation_url":"https://docs"}`},
		},
		{
			name: "500 with long body", status: 500, body: long,
			wantErr: []string{"returned 500 Internal Server Error", strings.Repeat("x", 512) + "…"},
			notErr:  []string{strings.Repeat("x", 513)},
		},
		{
			name: "200 outside expect_status", status: 200, body: `{}`, expect: "[201]",
			wantErr: []string{"returned 200 OK, expected 201"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, jsonHandler(tc.status, tc.body))
			src := backendSrc + `http {
  backend = "api"
  path = "/users/${args.login}"
  EXPECT
}`
			exp := ""
			if tc.expect != "" {
				exp = "expect_status = " + tc.expect
			}
			params := map[string]string{"login": "string"}
			h := compile(t, strings.Replace(src, "EXPECT", exp, 1), srv.URL, params)
			_, err := call(h, params, map[string]any{"login": "nobody"})
			if err == nil {
				t.Fatal("call succeeded, want an error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, w := range tc.notErr {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error contains %q; the excerpt must be at most 512 bytes", w)
				}
			}
		})
	}

	t.Run("404 in expect_status is a result", func(t *testing.T) {
		srv := newServer(t, jsonHandler(404, `{"message":"Not Found"}`))
		h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/x"
  expect_status = [200, 404]
}`, srv.URL, nil)
		out, err := call(h, nil, nil)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		if out.Vars["status"] != 404 || out.Structured["message"] != "Not Found" {
			t.Errorf("Vars = %v, Structured = %v", out.Vars, out.Structured)
		}
	})
}

func TestTimeout(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/slow"
  timeout = "150ms"
}`, srv.URL, nil)
	start := time.Now()
	_, err := call(h, nil, nil)
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("call succeeded, want a timeout")
	}
	if want := "GET " + srv.URL + "/slow: timed out after 150ms"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if elapsed > 2*time.Second {
		t.Errorf("call took %s; the timeout is 150ms", elapsed)
	}
}

func TestSlowBodyTimesOut(t *testing.T) {
	// Headers arrive at once, the body never ends: the timeout covers
	// reading the body too.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(200)
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/dribble"
  timeout = "150ms"
}`, srv.URL, nil)
	start := time.Now()
	_, err := call(h, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("error = %v, want a timeout", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("call took %s", time.Since(start))
	}
}

func TestContextCancel(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/hang"
}`, srv.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := adaptertest.Call(ctx, h, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "the call was canceled") {
		t.Fatalf("error = %v, want cancellation", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("cancellation took %s", time.Since(start))
	}
}

func TestRetry(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		extra    string
		failures int // the first n requests fail with 503
		wantHits int
		wantErr  string
	}{
		{name: "503 then success", method: "GET", failures: 2, wantHits: 3},
		{name: "exhausted", method: "GET", failures: 100, wantHits: 3, wantErr: "returned 503 Service Unavailable, expected a 2xx status (after 3 attempts)"},
		{name: "POST is not retried", method: "POST", extra: "body = {}", failures: 1, wantHits: 1, wantErr: "returned 503"},
		{name: "POST with retry_unsafe", method: "POST", extra: "body = {}\n  retry_unsafe = true", failures: 1, wantHits: 2},
		{name: "PUT is idempotent", method: "PUT", extra: "body = {}", failures: 1, wantHits: 2},
		{name: "status not listed", method: "GET", extra: "retry {\n attempts = 3\n backoff = \"1ms\"\n on = [502]\n }", failures: 1, wantHits: 1, wantErr: "returned 503"},
		{name: "tool retry overrides", method: "GET", extra: "retry {\n attempts = 5\n backoff = \"1ms\"\n on = [503]\n }", failures: 4, wantHits: 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if int(n.Add(1)) <= tc.failures {
					w.WriteHeader(503)
					io.WriteString(w, "busy")
					return
				}
				jsonHandler(200, `{"ok":true}`)(w, r)
			})
			h := compile(t, `
http_backend "api" {
  base_url = "SERVER"
  retry {
    attempts = 3
    backoff  = "1ms"
    on       = [502, 503, "timeout"]
  }
}
http {
  backend = "api"
  method  = "`+tc.method+`"
  path    = "/flaky"
  `+tc.extra+`
}`, srv.URL, nil)
			out, err := call(h, nil, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Errorf("call: %v", err)
			} else if out.Structured["ok"] != true {
				t.Errorf("Structured = %v", out.Structured)
			}
			if got := srv.hits(); got != tc.wantHits {
				t.Errorf("server hits = %d, want %d", got, tc.wantHits)
			}
		})
	}
}

func TestRetryOnTimeoutAndConnection(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				<-r.Context().Done()
				return
			}
			jsonHandler(200, `{"ok":true}`)(w, r)
		})
		h := compile(t, backendSrc+`http {
  backend = "api"
  path    = "/x"
  timeout = "100ms"
  retry {
    attempts = 2
    backoff  = "1ms"
    on       = ["timeout"]
  }
}`, srv.URL, nil)
		if _, err := call(h, nil, nil); err != nil {
			t.Fatalf("call: %v", err)
		}
		if srv.hits() != 2 {
			t.Errorf("hits = %d, want 2", srv.hits())
		}
	})
	t.Run("connection", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close() // no response at all
				}
				return
			}
			jsonHandler(200, `{"ok":true}`)(w, r)
		})
		h := compile(t, backendSrc+`http {
  backend = "api"
  path    = "/x"
  retry {
    attempts = 2
    backoff  = "1ms"
    on       = ["connection"]
  }
}`, srv.URL, nil)
		if _, err := call(h, nil, nil); err != nil {
			t.Fatalf("call: %v", err)
		}
		if srv.hits() != 2 {
			t.Errorf("hits = %d, want 2", srv.hits())
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := newServer(t, nil)
		u := srv.URL
		srv.Close()
		h := compile(t, backendSrc+`http {
  backend = "api"
  path    = "/x"
  retry {
    attempts = 2
    backoff  = "1ms"
  }
}`, u, nil)
		_, err := call(h, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "GET "+u+"/x: connection refused (after 2 attempts)") {
			t.Errorf("error = %v", err)
		}
	})
}

func TestRetryAfterIsCapped(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(429)
			return
		}
		jsonHandler(200, `{}`)(w, r)
	})
	h := compile(t, backendSrc+`http {
  backend = "api"
  path    = "/x"
  retry {
    attempts    = 2
    backoff     = "1ms"
    max_backoff = "50ms"
  }
}`, srv.URL, nil)
	start := time.Now()
	if _, err := call(h, nil, nil); err != nil {
		t.Fatalf("call: %v", err)
	}
	if el := time.Since(start); el < 40*time.Millisecond || el > 2*time.Second {
		t.Errorf("retry waited %s, want about max_backoff (50ms)", el)
	}
}

func TestTruncation(t *testing.T) {
	t.Run("default limit", func(t *testing.T) {
		big := `{"data":"` + strings.Repeat("a", 2<<20) + `"}`
		srv := newServer(t, jsonHandler(200, big))
		h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/big"
}`, srv.URL, nil)
		out, err := call(h, nil, nil)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		marker := "\n[truncated: response exceeded 1048576 bytes]"
		if !strings.HasSuffix(out.Text, marker) || len(out.Text) != 1<<20+len(marker) {
			t.Errorf("Text has %d bytes, ends %q", len(out.Text), out.Text[max(0, len(out.Text)-60):])
		}
		if out.Structured != nil {
			t.Errorf("Structured set for a truncated body")
		}
		if out.Vars["truncated"] != true || len(out.Vars["body"].(string)) != 1<<20 {
			t.Errorf("Vars[truncated] = %v, len(body) = %d", out.Vars["truncated"], len(out.Vars["body"].(string)))
		}
	})
	t.Run("endless body", func(t *testing.T) {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			chunk := bytes.Repeat([]byte("z"), 4096)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
		h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/endless"
  max_response_bytes = 10000
}`, srv.URL, nil)
		out, err := call(h, nil, nil)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		if want := strings.Repeat("z", 10000) + "\n[truncated: response exceeded 10000 bytes]"; out.Text != want {
			t.Errorf("Text has %d bytes, want %d", len(out.Text), len(want))
		}
	})
	t.Run("image too large", func(t *testing.T) {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.Write(make([]byte, 100))
		})
		h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/img"
  max_response_bytes = 50
}`, srv.URL, nil)
		_, err := call(h, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "larger than max_response_bytes (50 bytes)") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("gzip is limited after decompression", func(t *testing.T) {
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		zw.Write(bytes.Repeat([]byte("q"), 1<<20))
		zw.Close()
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(zipped.Bytes())
		})
		h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/z"
  headers = { Accept-Encoding = "gzip" }
  max_response_bytes = 1000
}`, srv.URL, nil)
		out, err := call(h, nil, nil)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		if !strings.HasPrefix(out.Text, strings.Repeat("q", 1000)+"\n[truncated") {
			t.Errorf("Text = %.80q…", out.Text)
		}
	})
}

func TestPathEscaping(t *testing.T) {
	params := map[string]string{"user": "string"}
	tests := []struct {
		value   string
		wantURI string // the request-target the server receives; "" when refused
		wantErr string
	}{
		{value: "octocat", wantURI: "/api/v1/users/octocat/repos"},
		{value: "../admin", wantURI: "/api/v1/users/..%2Fadmin/repos"},
		{value: "a/../b", wantURI: "/api/v1/users/a%2F..%2Fb/repos"},
		{value: "%2e%2e/x", wantURI: "/api/v1/users/%252e%252e%2Fx/repos"},
		{value: "%2e%2e", wantURI: "/api/v1/users/%252e%252e/repos"},
		{value: "x?admin=1", wantURI: "/api/v1/users/x%3Fadmin=1/repos"},
		{value: "#f", wantURI: "/api/v1/users/%23f/repos"},
		{value: "//evil.com/x", wantURI: "/api/v1/users/%2F%2Fevil.com%2Fx/repos"},
		{value: "http://evil", wantURI: "/api/v1/users/http:%2F%2Fevil/repos"},
		{value: "@evil.com", wantURI: "/api/v1/users/@evil.com/repos"},
		{value: "a b+c", wantURI: "/api/v1/users/a%20b+c/repos"},
		{value: "日本", wantURI: "/api/v1/users/%E6%97%A5%E6%9C%AC/repos"},
		{value: "..", wantErr: `path: args.user is "..", which is not allowed as a URL path segment`},
		{value: ".", wantErr: `path: args.user is ".", which is not allowed as a URL path segment`},
		{value: "", wantErr: "path: args.user is empty"},
		{value: "../../../admin", wantErr: "the URL path would leave the base path /api/v1; refused"},
	}
	srv := newServer(t, jsonHandler(200, `{}`))
	h := compile(t, `
http_backend "api" {
  base_url = "SERVER/api/v1/"
}
http {
  backend = "api"
  path    = "/users/${args.user}/repos"
}`, srv.URL, params)
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			before := srv.hits()
			_, err := call(h, params, map[string]any{"user": tc.value})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want %q", err, tc.wantErr)
				}
				if srv.hits() != before {
					t.Errorf("a refused request reached the server")
				}
				return
			}
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			got := srv.last(t)
			if got.RequestURI != tc.wantURI {
				t.Errorf("server saw %q, want %q", got.RequestURI, tc.wantURI)
			}
			if got.Host != host {
				t.Errorf("Host = %q, want %q", got.Host, host)
			}
		})
	}
}

func TestURLWithoutBackend(t *testing.T) {
	params := map[string]string{"id": "string", "q": "string"}
	srv := newServer(t, jsonHandler(200, `{"ok":true}`))
	h := compile(t, `http {
  url   = "SERVER/items/${args.id}"
  query = { q = args.q }
}`, srv.URL, params)
	for _, v := range []string{"../../etc/passwd", "//evil.com", "http://evil/", "x?y=1#z"} {
		if _, err := call(h, params, map[string]any{"id": v, "q": "a"}); err != nil {
			t.Fatalf("call(%q): %v", v, err)
		}
		got := srv.last(t)
		want := "/items/" + url.PathEscape(v) + "?q=a"
		if got.RequestURI != want || got.Host != strings.TrimPrefix(srv.URL, "http://") {
			t.Errorf("id %q: server saw %s %s, want %s", v, got.Host, got.RequestURI, want)
		}
	}
}

func TestQueryEscaping(t *testing.T) {
	params := map[string]string{"q": "string", "tags": "array", "page": "integer", "opt": "string"}
	srv := newServer(t, jsonHandler(200, `{}`))
	h := compile(t, `
http_backend "api" {
  base_url = "SERVER"
  query    = { api-version = "2024-01-01", per_page = "10" }
}
http {
  backend = "api"
  path    = "/search"
  query   = { q = args.q, tags = args.tags, page = args.page, opt = args.opt, per_page = "50" }
}`, srv.URL, params)
	q := `a&b=c#d e+f?/ü`
	_, err := call(h, params, map[string]any{"q": q, "tags": []any{"x", "y z"}, "page": float64(2)})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	got := srv.last(t)
	u, _ := url.ParseRequestURI(got.RequestURI)
	if u.Path != "/search" {
		t.Errorf("path = %q", u.Path)
	}
	want := url.Values{
		"q": {q}, "tags": {"x", "y z"}, "page": {"2"},
		"api-version": {"2024-01-01"}, "per_page": {"50"},
	}
	if !reflect.DeepEqual(u.Query(), want) {
		t.Errorf("query = %v, want %v (opt, not given, must be absent)", u.Query(), want)
	}
}

func TestJSONBody(t *testing.T) {
	params := map[string]string{"name": "string", "count": "integer", "labels": "array", "note": "string", "flag": "boolean"}
	srv := newServer(t, jsonHandler(201, `{"id": 7}`))
	h := compile(t, backendSrc+`http {
  backend = "api"
  method  = "POST"
  path    = "/items"
  body    = {
    name   = args.name
    count  = args.count
    labels = args.labels
    note   = args.note
    flag   = args.flag
    fixed  = "literal \"quoted\""
    nested = { list = [args.name, 1.5] }
  }
}`, srv.URL, params)
	name := "he said \"hi\" \\ </script> & ü 日本 😀\n'; DROP TABLE x; --"
	out, err := call(h, params, map[string]any{"name": name, "count": float64(3), "labels": []any{"a", "b"}, "flag": false})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if out.Structured["id"] != float64(7) {
		t.Errorf("Structured = %v", out.Structured)
	}
	got := srv.last(t)
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var decoded map[string]any
	if err := json.Unmarshal(got.Body, &decoded); err != nil {
		t.Fatalf("server got invalid JSON %q: %v", got.Body, err)
	}
	want := map[string]any{
		"name": name, "count": float64(3), "labels": []any{"a", "b"}, "flag": false,
		"fixed":  `literal "quoted"`,
		"nested": map[string]any{"list": []any{name, 1.5}},
	}
	if !reflect.DeepEqual(decoded, want) {
		t.Errorf("server decoded %#v\nwant %#v (note, not given, must be absent)", decoded, want)
	}
}

func TestFormBody(t *testing.T) {
	params := map[string]string{"user": "string", "scopes": "array"}
	srv := newServer(t, jsonHandler(200, `{}`))
	h := compile(t, backendSrc+`http {
  backend = "api"
  method  = "POST"
  path    = "/token"
  form    = { user = args.user, scope = args.scopes, grant_type = "password" }
}`, srv.URL, params)
	user := "a&b=c d+é"
	if _, err := call(h, params, map[string]any{"user": user, "scopes": []any{"read", "write"}}); err != nil {
		t.Fatalf("call: %v", err)
	}
	got := srv.last(t)
	if ct := got.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		t.Errorf("Content-Type = %q", ct)
	}
	vals, err := url.ParseQuery(string(got.Body))
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"user": {user}, "scope": {"read", "write"}, "grant_type": {"password"}}
	if !reflect.DeepEqual(vals, want) {
		t.Errorf("form = %v, want %v", vals, want)
	}
}

func TestHeaders(t *testing.T) {
	params := map[string]string{"trace": "string", "bad": "string"}
	srv := newServer(t, jsonHandler(200, `{}`))
	h := compile(t, `
http_backend "api" {
  base_url = "SERVER"
  headers  = { Accept = "application/vnd.test+json", X-Team = "core" }
}
http {
  backend = "api"
  path    = "/h"
  headers = { X-Trace = args.trace, X-Team = "tools", X-Bad = args.bad }
}`, srv.URL, params)
	if _, err := call(h, params, map[string]any{"trace": "abc"}); err != nil {
		t.Fatalf("call: %v", err)
	}
	got := srv.last(t).Header
	if got.Get("Accept") != "application/vnd.test+json" || got.Get("X-Trace") != "abc" || got.Get("X-Team") != "tools" || got.Get("User-Agent") != userAgent {
		t.Errorf("headers = %v", got)
	}
	if _, ok := got["X-Bad"]; ok {
		t.Errorf("X-Bad sent although args.bad was not given")
	}
	before := srv.hits()
	_, err := call(h, params, map[string]any{"trace": "abc\r\nX-Injected: 1"})
	if err == nil || !strings.Contains(err.Error(), "the value of header X-Trace contains a control character") || strings.Contains(err.Error(), "Injected") {
		t.Errorf("error = %v", err)
	}
	if srv.hits() != before {
		t.Errorf("a request with a CRLF header value was sent")
	}
}

func TestSecretsStayOut(t *testing.T) {
	const token = "ghp_s3cr3tT0kenValue"
	const key = "qk_0123456789abcdef"
	t.Setenv("MCPD_TEST_TOKEN", token)
	t.Setenv("MCPD_TEST_KEY", key)
	other := newServer(t, jsonHandler(200, `{}`))
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo-error":
			w.WriteHeader(500)
			io.WriteString(w, "bad auth: "+r.Header.Get("Authorization")+" key="+r.URL.Query().Get("key"))
		case "/echo":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Echo", r.Header.Get("Authorization"))
			json.NewEncoder(w).Encode(map[string]string{"auth": r.Header.Get("Authorization"), "key": r.URL.Query().Get("key")})
		case "/slow":
			<-r.Context().Done()
		case "/away":
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
		}
	})
	params := map[string]string{"p": "string"}
	h := compile(t, `
http_backend "api" {
  base_url = "SERVER"
  headers  = { Authorization = "Bearer ${env("MCPD_TEST_TOKEN")}" }
  query    = { key = env("MCPD_TEST_KEY") }
  timeout  = "100ms"
}
http {
  backend = "api"
  path    = "/${args.p}"
}`, srv.URL, params)

	for _, p := range []string{"echo-error", "slow", "away", "echo"} {
		out, err := call(h, params, map[string]any{"p": p})
		var texts []string
		if err != nil {
			texts = append(texts, err.Error())
		}
		if out != nil {
			b, _ := json.Marshal(out)
			texts = append(texts, out.Text, string(b))
		}
		if p != "echo" && err == nil {
			t.Errorf("%s: call succeeded, want an error", p)
		}
		for _, s := range texts {
			if strings.Contains(s, token) || strings.Contains(s, key) || strings.Contains(s, "s3cr3t") {
				t.Errorf("%s: a secret leaked: %s", p, s)
			}
		}
		if p == "echo" && out.Text != `{"auth":"[redacted]","key":"[redacted]"}` {
			t.Errorf("echo: Text = %q, want the echoed token redacted", out.Text)
		}
	}
	if srv.last(t).Header.Get("Authorization") != "Bearer "+token {
		t.Errorf("the token was not sent")
	}
	if other.hits() != 0 {
		t.Errorf("the cross-host redirect was followed")
	}
}

func TestRedirects(t *testing.T) {
	other := newServer(t, jsonHandler(200, `{"stolen":true}`))
	var srv *server
	srv = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/final", http.StatusMovedPermanently)
		case "/final":
			jsonHandler(200, `{"final":true}`)(w, r)
		case "/elsewhere":
			http.Redirect(w, r, other.URL+"/x?code=s3cr3t", http.StatusTemporaryRedirect)
		case "/hop":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	})
	host := strings.TrimPrefix(srv.URL, "http://")
	otherHost := strings.TrimPrefix(other.URL, "http://")
	tests := []struct {
		path    string
		wantErr string
	}{
		{path: "/moved"},
		{path: "/elsewhere", wantErr: "GET " + srv.URL + `/elsewhere: http_backend "api": redirected to http://` + otherHost + "/x (status 307); mcpd follows redirects within http://" + host + " only"},
		{path: "/hop", wantErr: "GET " + srv.URL + `/hop: http_backend "api": redirected to http://` + otherHost + "/x (status 307); mcpd follows redirects within http://" + host + " only"},
		{path: "/loop", wantErr: "stopped after 5 redirects"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			h := compile(t, `
http_backend "api" {
  base_url = "SERVER"
  headers  = { X-Api-Key = "k3y-of-the-backend" }
}
http {
  backend = "api"
  path = "`+tc.path+`"
}`, srv.URL, nil)
			out, err := call(h, nil, nil)
			if tc.wantErr == "" {
				if err != nil || out.Structured["final"] != true {
					t.Errorf("out = %v, err = %v", out, err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the error shows the Location's query: %v", err)
			}
		})
	}
	// A tool with a url and no backend: the same policy, the tool named.
	h := compile(t, `http {
  url     = "SERVER/elsewhere"
  headers = { X-Api-Key = "k3y-of-the-tool" }
}`, srv.URL, nil)
	_, err := call(h, nil, nil)
	if want := `'s url: redirected to http://` + otherHost + "/x (status 307); mcpd follows redirects within http://" + host + " only"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("url: error = %v, want %q", err, want)
	}
	if other.hits() != 0 {
		t.Errorf("the other host was contacted (headers %v)", other.last(t).Header)
	}
}

func TestNoCookieSharing(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "abc"})
		jsonHandler(200, `{}`)(w, r)
	})
	h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/c"
}`, srv.URL, nil)
	for i := 0; i < 2; i++ {
		if _, err := call(h, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if c := srv.last(t).Header.Get("Cookie"); c != "" {
		t.Errorf("a cookie from an earlier call was sent: %q", c)
	}
}

func TestConcurrentCalls(t *testing.T) {
	params := map[string]string{"n": "string"}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"path": r.URL.Path})
	})
	h := compile(t, backendSrc+`http {
  backend = "api"
  path = "/n/${args.n}"
}`, srv.URL, params)
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func(i int) {
			n := strings.Repeat("x", i+1)
			out, err := call(h, params, map[string]any{"n": n})
			if err == nil && out.Structured["path"] != "/n/"+n {
				err = fmt.Errorf("n=%s: Structured = %v", n, out.Structured)
			}
			errs <- err
		}(i)
	}
	for i := 0; i < 20; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestPathTemplateForms(t *testing.T) {
	t.Setenv("MCPD_TEST_API_PREFIX", "v1/beta")
	params := map[string]string{"p": "string", "opt": "string", "n": "integer"}
	srv := newServer(t, jsonHandler(200, `{}`))
	tests := []struct {
		path    string
		args    map[string]any
		wantURI string
	}{
		// A lone interpolation is one segment.
		{`"${args.p}"`, map[string]any{"p": "a/b"}, "/a%2Fb"},
		// Interpolations without arguments are configuration: kept as written.
		{`"/${env("MCPD_TEST_API_PREFIX")}/x/${args.p}"`, map[string]any{"p": "a/b"}, "/v1/beta/x/a%2Fb"},
		// Numbers are formatted; two interpolations in one segment.
		{`"/items/${args.n}-${args.p}.json"`, map[string]any{"n": float64(42), "p": "x/y"}, "/items/42-x%2Fy.json"},
		// A template directive is one interpolation too.
		{`"/f/%{ if args.opt != null }${args.opt}%{ else }none%{ endif }"`, map[string]any{"opt": "../o"}, "/f/..%2Fo"},
		{`"/f/%{ if args.opt != null }${args.opt}%{ else }none%{ endif }"`, map[string]any{}, "/f/none"},
		// A static path.
		{`"/static/path"`, nil, "/static/path"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			h := compile(t, backendSrc+"http {\n  backend = \"api\"\n  path = "+tc.path+"\n}", srv.URL, params)
			if _, err := call(h, params, tc.args); err != nil {
				t.Fatalf("call: %v", err)
			}
			if got := srv.last(t).RequestURI; got != tc.wantURI {
				t.Errorf("server saw %q, want %q", got, tc.wantURI)
			}
		})
	}
}
