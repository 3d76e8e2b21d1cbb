package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioContainer runs the image as a desktop host would (podman run -i),
// with conf mounted read-only at /etc/mcpd (or the image's own demo when
// conf is ""), a read-only root and the image's data volume, and connects
// an SDK client over its stdin and stdout.
func stdioContainer(t *testing.T, image, conf string) *mcp.ClientSession {
	t.Helper()
	args := []string{"run", "-i", "--rm", "--read-only"}
	if conf != "" {
		args = append(args, "-v", conf+":/etc/mcpd:ro")
	}
	args = append(args, image, "serve", "--stdio")
	cmd := exec.Command("podman", args...)
	var stderr logTail
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	go stderr.follow(errPipe)
	client := mcp.NewClient(&mcp.Implementation{Name: "deploytest", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t, 60*time.Second), &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("container stderr:\n%s", stderr.String())
		}
	})
	return cs
}

// The first deployment a user makes: the project `mcpd init` writes,
// mounted read-only in the image, works as it does on the laptop. Its
// SQLite file goes to the image's data volume (MCPD_DATA_DIR), its shell
// tool finds wc, and its own tests pass inside the container.
func TestContainerInitScaffold(t *testing.T) {
	image := testImage(t)
	conf := configDir(t, nil)
	ctx := bounded(t, 120*time.Second)
	if out, err := exec.CommandContext(ctx, mcpdBin, "init", conf).CombinedOutput(); err != nil {
		t.Fatalf("mcpd init: %v\n%s", err, out)
	}
	// configDir's files must be readable by the container's user 65532.
	entries, _ := os.ReadDir(conf)
	for _, e := range entries {
		os.Chmod(filepath.Join(conf, e.Name()), 0o644)
	}

	out, err := podman(ctx, "run", "--rm", "--read-only", "-v", conf+":/etc/mcpd:ro", image, "test")
	if err != nil || !strings.Contains(out, "4 passed, 0 failed") {
		t.Errorf("mcpd test in the image: %v\n%s", err, out)
	}

	cs := stdioContainer(t, image, conf)
	names, err := toolNames(ctx, cs)
	if err != nil || !slices.Equal(names, []string{"count_words", "github_repo", "greet", "search_notes"}) {
		t.Errorf("tools/list = %v, %v", names, err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_notes", map[string]any{"text": "welcome"}, "This note comes from seed.sql"},
		{"count_words", map[string]any{"text": "one two three"}, `{"words":3}`},
		{"greet", map[string]any{"name": "Ada"}, "Hello, Ada!"},
	} {
		if text, err := call(ctx, cs, c.tool, c.args); err != nil || !strings.Contains(text, c.want) {
			t.Errorf("%s = %q, %v; want %q", c.tool, text, err, c.want)
		}
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://readme"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "podman run") {
		t.Errorf("resources/read notes://readme: %v, %v", res, err)
	}
	// Nothing was written into the config directory.
	if _, err := os.Stat(filepath.Join(conf, ".mcpd")); !os.IsNotExist(err) {
		t.Errorf("the container wrote into the config mount: %v", err)
	}
}

// The image's own demo (its default config) works with no mount: the
// bookshop in the data volume, the word counter with the image's wc.
func TestContainerDemo(t *testing.T) {
	image := testImage(t)
	ctx := bounded(t, 120*time.Second)
	cs := stdioContainer(t, image, "")
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_book", map[string]any{"id": 1}, `"id":1`},
		{"word_count", map[string]any{"text": "héllo wörld\nbye"}, `{"characters":15,"lines":2,"words":3}`},
	} {
		if text, err := call(ctx, cs, c.tool, c.args); err != nil || !strings.Contains(text, c.want) {
			t.Errorf("%s = %q, %v; want %q", c.tool, text, err, c.want)
		}
	}
}

// A SQLite file the config puts in its own (read-only) directory is a tool
// error that names the file and the data directory's variable, not
// SQLite's bare "unable to open database file".
func TestContainerReadOnlyDatabaseError(t *testing.T) {
	image := testImage(t)
	conf := configDir(t, map[string]string{"tools.hcl": `
database "notes" {
  driver = "sqlite"
  dsn    = "file:.mcpd/notes.db"
  seed   = "CREATE TABLE notes (x);"
}

tool "count_notes" {
  description = "Counts the notes"
  sql {
    database = "notes"
    query    = "SELECT count(*) AS n FROM notes"
  }
}
`})
	ctx := bounded(t, 120*time.Second)
	cs := stdioContainer(t, image, conf)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count_notes", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	text := textOf(res)
	if !res.IsError || !strings.Contains(text, "/etc/mcpd/.mcpd/notes.db") || !strings.Contains(text, "MCPD_DATA_DIR") {
		t.Errorf("count_notes = %q (isError %v); want an error naming /etc/mcpd/.mcpd/notes.db and MCPD_DATA_DIR", text, res.IsError)
	}
}
