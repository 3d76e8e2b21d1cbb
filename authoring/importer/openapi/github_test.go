package openapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mcpd/mcpd/authoring/importer"
	"github.com/mcpd/mcpd/authoring/importer/importtest"
	"github.com/mcpd/mcpd/authoring/importer/openapi"
)

// githubOps is a sample of GitHub's operations, of every shape: path,
// query and header parameters, JSON bodies with nested objects and
// arrays, oneOf parameters, array responses, empty responses.
var githubOps = []string{
	"issues/get", "issues/create", "issues/list-for-repo", "issues/update", "issues/add-labels",
	"issues/remove-label", "issues/lock", "repos/get", "repos/list-for-user", "meta/root",
	"gists/create", "reactions/create-for-issue", "search/issues-and-pull-requests",
	"users/get-by-username", "actions/get-workflow", "git/create-tree", "markdown/render",
}

// TestGitHub converts GitHub's whole REST API description (about 1,200
// operations), then serves a sample of its operations through the engine
// and an MCP client against a server that validates every request against
// the description.
func TestGitHub(t *testing.T) {
	if testing.Short() {
		t.Skip("the GitHub description takes a while to parse")
	}
	start := time.Now()
	doc := loadDoc(t, "api.github.com.json.gz")
	t.Logf("parsed in %v", time.Since(start))
	if !raceEnabled {
		convertAll(t, doc)
	}

	// A sample, served and called.
	api := startAPIServer(t, nil)
	res, err := openapi.Convert(doc, openapi.Options{Name: "github", BaseURL: api.URL, Operations: githubOps})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tools != len(githubOps) {
		t.Fatalf("%d tools, want %d", res.Tools, len(githubOps))
	}
	// The server validates against the paths of the sample (the whole
	// description has paths kin-openapi's router deems conflicting).
	want := map[string]bool{}
	for _, op := range githubOps {
		want[op] = true
	}
	for path, item := range doc.Paths.Map() {
		keep := false
		for _, op := range item.Operations() {
			keep = keep || want[op.OperationID]
		}
		if !keep {
			doc.Paths.Delete(path)
		}
	}
	api.route(t, doc, "")
	s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": res.HCL})
	cs := importtest.Connect(t, s)
	for _, tool := range s.Tools {
		t.Run(tool.Def.Name, func(t *testing.T) {
			args := argsFor(tool.InputSchema)
			res := importtest.Call(t, cs, tool.Def.Name, args)
			reqs, errs := api.take()
			for _, e := range errs {
				t.Error(e)
			}
			if res.IsError {
				t.Fatalf("%v: tool error: %s", args, importtest.Text(res))
			}
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			squash := func(s string) string { return strings.NewReplacer("/", "", "-", "", "_", "").Replace(s) }
			if squash(reqs[0].Op) != squash(tool.Def.Name) {
				t.Errorf("the request reached %s", reqs[0].Op)
			}
		})
	}
}

// convertAll converts the whole description: every operation is either a
// tool or reported as left out.
func convertAll(t *testing.T, doc *openapi3.T) {
	start := time.Now()
	all, err := openapi.Convert(doc, openapi.Options{Name: "github"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converted %d tools in %v: %d parts not converted, %d notes, %d bytes of HCL",
		all.Tools, time.Since(start), all.Report.Count(importer.Skipped), all.Report.Count(importer.Note), len(all.HCL))
	ops := 0
	for _, item := range doc.Paths.Map() {
		ops += len(item.Operations())
	}
	left := map[string]bool{}
	for _, i := range all.Report.Issues {
		if strings.Contains(i.Message, "operation left out") {
			left[i.Where] = true
		}
	}
	if all.Tools+len(left) != ops {
		t.Errorf("%d tools + %d operations left out, want the %d operations of the document", all.Tools, len(left), ops)
	}
	if all.Tools < ops*95/100 {
		t.Errorf("only %d of %d operations converted", all.Tools, ops)
	}
}
