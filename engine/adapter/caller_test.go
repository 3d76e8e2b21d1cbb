package adapter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/principal"
)

func TestCallersUnproducible(t *testing.T) {
	keys := &AuthInfo{Claims: map[string]bool{"tenant": true, "org": true, "org.id": true}}
	for _, c := range []struct {
		callers *AuthInfo
		path    string
		never   bool
	}{
		{keys, "claims.tenant", false},
		{keys, "claims.org.id", false},
		{keys, "name", false},
		{keys, "claims.region", true},
		{keys, "claims.org.name", true},
		{&AuthInfo{OpenClaims: true}, "claims.region", false},
		{nil, "claims.region", false}, // no auth block: CheckCallers' error, not this
	} {
		if why := c.callers.Unproducible(c.path); (why != "") != c.never {
			t.Errorf("%s: %q", c.path, why)
		}
	}
}

func decodeCallerValue(t *testing.T, src string, callers *AuthInfo) (*CallerValue, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	d := NewDecoder(&Scope{Dir: ".", Auth: callers})
	cv, _ := d.DecodeCallerValue(f.Body, "setting \"x\"")
	return cv, d.Diags
}

func TestCallerValue(t *testing.T) {
	open := &AuthInfo{OpenClaims: true}
	cv, diags := decodeCallerValue(t, "from_caller = \"claims.v\"\nenum = [\"3\", \"true\", \"acme\", \"1.5\"]\n", open)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, c := range []struct {
		claim any
		want  string // the value, or "error: <part of it>"
	}{
		{"acme", "acme"},
		{float64(3), "3"},
		{int64(3), "3"},
		{json.Number("3"), "3"},
		{1.5, "1.5"},
		{true, "true"},
		{false, "error: not one of the allowed values"},
		{nil, "error: needs an authenticated caller with claim v"},
		{map[string]any{"a": 1}, "error: not a single value"},
		{string([]byte{0xff}), "error: not valid UTF-8"},
	} {
		got, err := cv.Read(&principal.Principal{Name: "p", Claims: map[string]any{"v": c.claim}})
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(c.want, "error: ") && got != c.want || strings.HasPrefix(c.want, "error: ") && !strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) {
			t.Errorf("%#v: %q, want %q", c.claim, got, c.want)
		}
	}
	if _, err := cv.Read(nil); err == nil || !strings.Contains(err.Error(), "the local user") {
		t.Errorf("the local user: %v", err)
	}

	name, _ := decodeCallerValue(t, "from_caller = \"name\"\n", open)
	if got, err := name.Read(&principal.Principal{Name: "alice"}); err != nil || got != "alice" {
		t.Errorf("name: %q %v", got, err)
	}

	for src, want := range map[string]string{
		"from_caller = \"claims.v\"\n":                  "the config has no auth block",
		"from_caller = \"claim.v\"\n":                   "is not a caller attribute",
		"from_caller = \"claims.v\"\nmax_length = 0\n":  "max_length",
		"from_caller = \"claims.v\"\nenum = []\n":       "enum must list at least one value",
		"from_caller = \"claims.v\"\nunknown = 1\n":     "unknown",
		"from_caller = \"claims.v\"\npattern = \"[\"\n": "Invalid pattern",
	} {
		callers := open
		if strings.Contains(want, "no auth block") {
			callers = nil
		}
		_, diags := decodeCallerValue(t, src, callers)
		if !diags.HasErrors() || !strings.Contains(strings.ToLower(diags.Error()), strings.ToLower(want)) {
			t.Errorf("%q: %v, want %q", src, diags, want)
		}
	}
}
