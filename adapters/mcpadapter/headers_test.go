package mcpadapter

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// The block's headers go to the url's origin only: should a request to
// another origin ever be made with the upstream's transport (a redirect
// followed), it carries none of them.
func TestHeaderTransportSameOriginOnly(t *testing.T) {
	seen := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen[r.URL.Path] = r.Header.Get("X-Api-Key")
	}))
	defer srv.Close()
	configured, _ := url.Parse(srv.URL + "/mcp")
	// The same server under another name is another origin.
	other, _ := url.Parse(srv.URL)
	other.Host = "localhost:" + other.Port()
	tr := &headerTransport{headers: map[string]string{"X-Api-Key": "k3y"}, origin: configured, base: http.DefaultTransport}
	for _, u := range []string{srv.URL + "/mcp", srv.URL + "/other-path", other.String() + "/elsewhere"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if seen["/mcp"] != "k3y" || seen["/other-path"] != "k3y" {
		t.Errorf("the configured origin did not get the headers: %v", seen)
	}
	if v, ok := seen["/elsewhere"]; !ok || v != "" {
		t.Errorf("another origin got %q (reached: %v)", v, ok)
	}
}
