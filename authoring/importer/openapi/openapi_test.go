package openapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/authoring/importer/importtest"
	"github.com/mcpd/mcpd/authoring/importer/openapi"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func loadDoc(t testing.TB, name string) *openapi3.T {
	t.Helper()
	path := filepath.Join("testdata", name)
	if strings.HasSuffix(name, ".gz") {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		// Without the lines of each element (IncludeOrigin), which the
		// tests of this large document do not look at and which make
		// parsing it much slower.
		doc, err := openapi3.NewLoader().LoadFromData(data)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	doc, err := openapi.Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// golden compares got with testdata/golden/NAME, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generated output (run go test -update and review the diff):\n%s", path, got)
	}
}

// TestGolden converts the Petstore documents, compares the HCL and the
// report with the golden files, and loads the HCL with the real loader.
func TestGolden(t *testing.T) {
	for _, doc := range []string{"petstore-3.0.yaml", "petstore-expanded-3.0.yaml", "petstore-3.1.yaml"} {
		t.Run(doc, func(t *testing.T) {
			res, err := openapi.Convert(loadDoc(t, doc), openapi.Options{Source: doc})
			if err != nil {
				t.Fatal(err)
			}
			base := strings.TrimSuffix(doc, ".yaml")
			golden(t, base+".hcl", res.HCL)
			var rep bytes.Buffer
			res.Report.Write(&rep)
			golden(t, base+".report.txt", rep.Bytes())
			s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": res.HCL})
			if len(s.Tools) != res.Tools {
				t.Errorf("the config declares %d tools, the converter says %d", len(s.Tools), res.Tools)
			}
		})
	}
}

// TestPetstoreCalls calls every tool of the converted Petstore 3.1
// document through the engine and an MCP client against a server that
// validates each request against the document, and checks the requests
// of some tools field by field.
func TestPetstoreCalls(t *testing.T) {
	creds := map[string]string{
		"api_key": "key-123456",
		"bearer":  "Bearer tok-abcdef",
		"basic":   "Basic dXNlcjpwYXNzd29yZA==", // user:password
		"oauth":   "Bearer oauth-token-1",
	}
	t.Setenv("SWAGGER_PETSTORE_API_KEY", "key-123456")
	t.Setenv("SWAGGER_PETSTORE_BEARER_TOKEN", "tok-abcdef")
	t.Setenv("SWAGGER_PETSTORE_BASIC_USERNAME", "user")
	t.Setenv("SWAGGER_PETSTORE_BASIC_PASSWORD", "password")
	t.Setenv("SWAGGER_PETSTORE_OAUTH_TOKEN", "oauth-token-1")

	doc := loadDoc(t, "petstore-3.1.yaml")
	api := newAPIServer(t, loadDoc(t, "petstore-3.1.yaml"), "/v3", creds)
	res, err := openapi.Convert(doc, openapi.Options{BaseURL: api.URL + "/v3"})
	if err != nil {
		t.Fatal(err)
	}
	s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": res.HCL})
	cs := importtest.Connect(t, s)

	tests := []struct {
		tool   string
		args   map[string]any
		want   seen
		accept string
		check  func(t *testing.T, res *mcp.CallToolResult)
	}{
		{
			tool: "find_pets",
			args: map[string]any{"tags": []any{"cat", "dog"}, "status": "sold"},
			want: seen{Method: "GET", Path: "/v3/pets", Query: url.Values{"tags": {"cat,dog"}, "limit": {"20"}, "status": {"sold"}}},
			check: func(t *testing.T, res *mcp.CallToolResult) {
				sc, _ := res.StructuredContent.(map[string]any)
				if items, _ := sc["items"].([]any); len(items) != 1 {
					t.Errorf("structured content %v, want one pet under items", res.StructuredContent)
				}
			},
		},
		{
			tool: "add_pet",
			args: map[string]any{"name": "Rex", "tag": nil, "owner": map[string]any{"name": "Ann"}, "x_request_id": "6f1c2a55-5b7e-4c39-9b3e-2f0e5e8e9a10"},
			want: seen{Method: "POST", Path: "/v3/pets", Query: url.Values{}, Body: map[string]any{"name": "Rex", "owner": map[string]any{"name": "Ann"}, "status": "available"}},
		},
		{
			tool: "find_pets",
			args: map[string]any{"status": nil, "limit": 5},
			want: seen{Method: "GET", Path: "/v3/pets", Query: url.Values{"limit": {"5"}}},
		},
		{
			tool: "find_pet_by_id",
			args: map[string]any{"id": 7},
			want: seen{Method: "GET", Path: "/v3/pets/7", Query: url.Values{}},
			// The response comes as JSON or XML: the tool asks for JSON.
			accept: "application/json",
		},
		{
			tool: "update_pet",
			args: map[string]any{"id": 7, "name": "Max"},
			want: seen{Method: "PATCH", Path: "/v3/pets/7", Query: url.Values{}, Body: map[string]any{"name": "Max"}},
		},
		{
			tool: "delete_pet",
			args: map[string]any{"id": 9},
			want: seen{Method: "DELETE", Path: "/v3/pets/9", Query: url.Values{}},
		},
		{
			tool: "record_vaccination",
			args: map[string]any{"id": 3, "vaccine": "rabies", "date": "2024-05-06"},
			want: seen{Method: "POST", Path: "/v3/pets/3/vaccinations", Query: url.Values{}, Body: url.Values{"vaccine": {"rabies"}, "date": {"2024-05-06"}}},
		},
		{
			tool: "search_pets",
			args: map[string]any{"body": map[string]any{"tag": "cat"}},
			want: seen{Method: "POST", Path: "/v3/search", Query: url.Values{}, Body: map[string]any{"tag": "cat"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res := importtest.Call(t, cs, tt.tool, tt.args)
			reqs, errs := api.take()
			for _, e := range errs {
				t.Error(e)
			}
			if res.IsError {
				t.Fatalf("tool error: %s", importtest.Text(res))
			}
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if a := got.Header.Get("Accept"); tt.accept != "" && a != tt.accept {
				t.Errorf("Accept: %q, want %q", a, tt.accept)
			}
			if got.Method != tt.want.Method || got.Path != tt.want.Path || !reflect.DeepEqual(got.Query, tt.want.Query) || !reflect.DeepEqual(got.Body, tt.want.Body) {
				t.Errorf("request %s %s ?%v body %v\nwant    %s %s ?%v body %v", got.Method, got.Path, got.Query, got.Body, tt.want.Method, tt.want.Path, tt.want.Query, tt.want.Body)
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
	// Every tool, with arguments made from its own input schema.
	for _, tool := range s.Tools {
		t.Run("schema/"+tool.Def.Name, func(t *testing.T) {
			res := importtest.Call(t, cs, tool.Def.Name, argsFor(tool.InputSchema))
			_, errs := api.take()
			if tool.Def.Name == "list_categories" {
				// Its cookie credentials are not converted (the report says
				// so): the API refuses the request.
				if !res.IsError || len(errs) != 1 || !strings.Contains(errs[0], "security requirements failed") {
					t.Errorf("list_categories: got %v, %q; want the API to refuse a request without the cookie", errs, importtest.Text(res))
				}
				return
			}
			for _, e := range errs {
				t.Error(e)
			}
			if res.IsError {
				t.Errorf("tool error: %s", importtest.Text(res))
			}
		})
	}
}

// TestPetstore30Calls does the same for the OpenAPI 3.0 Petstore
// documents, which need no credentials.
func TestPetstore30Calls(t *testing.T) {
	for _, name := range []string{"petstore-3.0.yaml", "petstore-expanded-3.0.yaml"} {
		t.Run(name, func(t *testing.T) {
			api := newAPIServer(t, loadDoc(t, name), "/v1", nil)
			res, err := openapi.Convert(loadDoc(t, name), openapi.Options{BaseURL: api.URL + "/v1"})
			if err != nil {
				t.Fatal(err)
			}
			s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": res.HCL})
			cs := importtest.Connect(t, s)
			for _, tool := range s.Tools {
				args := argsFor(tool.InputSchema)
				res := importtest.Call(t, cs, tool.Def.Name, args)
				reqs, errs := api.take()
				for _, e := range errs {
					t.Errorf("%s: %s", tool.Def.Name, e)
				}
				if res.IsError {
					t.Errorf("%s%v: tool error: %s", tool.Def.Name, args, importtest.Text(res))
				}
				if len(reqs) != 1 {
					t.Errorf("%s: %d requests, want 1", tool.Def.Name, len(reqs))
				}
			}
		})
	}
}

// TestLoadURL reads a document from a URL; its references may only point
// to the same host.
func TestLoadURL(t *testing.T) {
	pets, err := os.ReadFile(filepath.Join("testdata", "petstore-3.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the importer read %s from another host", r.URL)
	}))
	defer elsewhere.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/openapi.yaml":
			w.Write(pets)
		case "/split.yaml":
			io.WriteString(w, strings.Replace(string(pets), `$ref: "#/components/schemas/Pets"`, `$ref: "/pets.yaml#/Pets"`, 1))
		case "/pets.yaml":
			io.WriteString(w, "Pets:\n  type: array\n  items:\n    type: string\n")
		case "/moved.yaml":
			http.Redirect(w, r, "/openapi.yaml", http.StatusMovedPermanently)
		case "/bounce.yaml":
			io.WriteString(w, strings.Replace(string(pets), `$ref: "#/components/schemas/Pets"`, `$ref: "/away.yaml#/Pets"`, 1))
		case "/away.yaml":
			http.Redirect(w, r, elsewhere.URL+"/pets.yaml", http.StatusFound)
		case "/remote.yaml":
			io.WriteString(w, strings.Replace(string(pets), `$ref: "#/components/schemas/Pets"`, `$ref: "`+elsewhere.URL+`/pets.yaml#/Pets"`, 1))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, ok := range []string{"/openapi.yaml", "/split.yaml", "/moved.yaml"} {
		doc, err := openapi.Load(ctx, srv.URL+ok)
		if err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
		if _, err := openapi.Convert(doc, openapi.Options{}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := openapi.Load(ctx, srv.URL+"/remote.yaml"); err == nil || !strings.Contains(err.Error(), "same host") {
		t.Errorf("a reference to another host: %v", err)
	}
	want := "the OpenAPI document: redirected to " + elsewhere.URL + "/pets.yaml (status 302); mcpd follows redirects within " + srv.URL + " only"
	if _, err := openapi.Load(ctx, srv.URL+"/bounce.yaml"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a reference that redirects to another host: %v\nwant an error with %q", err, want)
	}
	if _, err := openapi.Load(ctx, srv.URL+"/missing.yaml"); err == nil {
		t.Error("a missing document loaded")
	}
	// A document read from a file reads no URL.
	file := filepath.Join(t.TempDir(), "remote.yaml")
	os.WriteFile(file, []byte(strings.Replace(string(pets), `$ref: "#/components/schemas/Pets"`, `$ref: "`+elsewhere.URL+`/pets.yaml#/Pets"`, 1)), 0o644)
	if _, err := openapi.Load(ctx, file); err == nil {
		t.Error("a file's reference to a URL was followed")
	}
}

func TestNotOpenAPI3(t *testing.T) {
	file := filepath.Join(t.TempDir(), "swagger.yaml")
	os.WriteFile(file, []byte("swagger: \"2.0\"\ninfo: {title: x, version: \"1\"}\npaths:\n  /a:\n    get:\n      responses: {200: {description: ok}}\n"), 0o644)
	doc, err := openapi.Load(context.Background(), file)
	if err == nil {
		_, err = openapi.Convert(doc, openapi.Options{})
	}
	if err == nil || !strings.Contains(err.Error(), "OpenAPI 3.0 and 3.1") {
		t.Errorf("a Swagger 2.0 document: %v", err)
	}
}

// Each operation of testdata/bodies.yaml is paired with what becomes of its
// request body: a tool, or the operation left out with the report line
// that says why. A body the http adapter cannot send (multipart, octet-
// stream, XML) leaves the operation out even when the body is optional, as
// OpenAPI bodies are unless they say otherwise: the tool would upload
// nothing.
func TestRequestBodies(t *testing.T) {
	res, err := openapi.Convert(loadDoc(t, "bodies.yaml"), openapi.Options{Source: "bodies.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var rep bytes.Buffer
	res.Report.Write(&rep)
	s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": res.HCL})
	tests := []struct {
		op     string
		tool   string
		left   bool // the operation is left out: no tool
		report []string
	}{
		{"uploadAvatar", "upload_avatar", true, []string{
			"line 9 (#/paths/~1avatar/post): not converted: operation left out: its request body is not converted",
			"line 11 (#/paths/~1avatar/post/requestBody): not converted: a request body of multipart/form-data is not converted: the http adapter sends JSON or form bodies",
		}},
		{"uploadRaw", "upload_raw", true, []string{
			"line 24 (#/paths/~1raw/put): not converted: operation left out: its request body is not converted",
			"line 26 (#/paths/~1raw/put/requestBody): not converted: a request body of application/octet-stream is not converted",
		}},
		{"putXML", "put_xml", true, []string{
			"(#/paths/~1xml/put): not converted: operation left out: its request body is not converted",
			"(#/paths/~1xml/put/requestBody): not converted: a request body of application/xml is not converted",
		}},
		{"createNote", "create_note", false, nil},
		{"postEither", "post_either", false, nil},
		{"postForm", "post_form", false, []string{
			"(#/paths/~1form/post/requestBody/content/application~1x-www-form-urlencoded/schema/properties/meta): not converted: a form field that is an object is not converted",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			if _, ok := s.Tool(tc.tool); ok == tc.left {
				t.Errorf("tool %s: declared %v, want %v:\n%s", tc.tool, ok, !tc.left, res.HCL)
			}
			for _, line := range tc.report {
				if !strings.Contains(rep.String(), line) {
					t.Errorf("report lacks %q:\n%s", line, rep.String())
				}
			}
		})
	}
	if len(s.Tools) != 3 || res.Tools != 3 {
		t.Errorf("%d tools (converter: %d), want 3:\n%s", len(s.Tools), res.Tools, res.HCL)
	}
}
