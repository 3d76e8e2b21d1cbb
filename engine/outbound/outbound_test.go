package outbound

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://api.example.com/a", "https://API.example.com:443/b?x=1", true},
		{"http://h/a", "http://h:80/", true},
		{"http://h/a", "https://h/a", false},        // a change of scheme (a downgrade the other way)
		{"http://h:8080/", "http://h:8081/", false}, // another port of the same host
		{"https://h/", "https://h.evil.example/", false},
		{"https://h/", "https://sub.h/", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := SameOrigin(a, b); got != tc.same {
			t.Errorf("SameOrigin(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

func TestShownAndOrigin(t *testing.T) {
	u, _ := url.Parse("https://user:pw@Other.example:443/p/a?token=s3cr3t#frag")
	if got := Shown(u); got != "https://Other.example:443/p/a" {
		t.Errorf("Shown = %q", got)
	}
	if got := Origin(u); got != "https://other.example" {
		t.Errorf("Origin = %q", got)
	}
	long, _ := url.Parse("https://h/" + strings.Repeat("a", 1000))
	if got := Shown(long); len(got) > maxShown+3 || !strings.HasSuffix(got, "...") {
		t.Errorf("Shown of a long URL = %d bytes", len(got))
	}
	u, _ = url.Parse("http://h:8080/x")
	if got := Origin(u); got != "http://h:8080" {
		t.Errorf("Origin = %q", got)
	}
}

// A real client against a server that redirects to a second one: the
// second is never asked, and the error names who and the Location.
func TestPolicies(t *testing.T) {
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x?code=s3cr3t", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, "/final", http.StatusMovedPermanently)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/nowhere":
			w.WriteHeader(http.StatusFound)
		}
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name    string
		client  *http.Client
		path    string
		wantErr string // "": the request succeeds
	}{
		{"refuse/away", Client(`upstream "x"`, nil), "/away",
			`upstream "x": redirected to ` + other.URL + `/x (status 307); mcpd does not follow redirects: set url to the final address`},
		{"refuse/same origin", Client(`upstream "x"`, nil), "/moved",
			`upstream "x": redirected to ` + srv.URL + `/final (status 301); mcpd does not follow redirects`},
		{"refuse/no location", Client(`upstream "x"`, nil), "/nowhere",
			`upstream "x": redirected to no Location (status 302)`},
		{"same origin/away", &http.Client{CheckRedirect: SameOriginRedirects(`http_backend "api"`, 5)}, "/away",
			`http_backend "api": redirected to ` + other.URL + `/x (status 307); mcpd follows redirects within ` + srv.URL + ` only`},
		{"same origin/moved", &http.Client{CheckRedirect: SameOriginRedirects(`http_backend "api"`, 5)}, "/moved", ""},
		{"same origin/loop", &http.Client{CheckRedirect: SameOriginRedirects(`http_backend "api"`, 5)}, "/loop", "stopped after 5 redirects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.client.Get(srv.URL + tc.path)
			if err == nil {
				resp.Body.Close()
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			re := &RedirectError{}
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want a RedirectError with %q", err, tc.wantErr)
			}
			shown := err.Error()
			if strings.HasPrefix(tc.name, "same origin") {
				shown = re.Error() // what its callers show (net/http's wrapper shows the Location)
			}
			if strings.Contains(shown, "s3cr3t") {
				t.Errorf("the error shows the Location's query: %v", shown)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the address the redirects named got %d requests", n)
	}
}
