package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README shows a newcomer how to run the demo and the tests, as
// commands, before any install step; and its sample `mcpd test` output
// is the one the demo gives.
func TestReadmeFirstSteps(t *testing.T) {
	clearEnv(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	install := strings.Index(readme, "go install ./cmd/...")
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme)
	if block == nil || install < 0 || strings.Index(readme, block[0]) > install {
		t.Fatalf("the README's first sh block is not before its install step")
	}
	for _, cmd := range []string{"go run ./cmd/mcpd serve", "go test ./..."} {
		if !regexp.MustCompile("(?m)^" + regexp.QuoteMeta(cmd) + "( |$)").MatchString(block[1]) {
			t.Errorf("the README's first commands\n%s\ndo not include %q", block[1], cmd)
		}
	}
	// .ci/run runs the same tests (with -race -count=1).
	if ci, err := os.ReadFile(filepath.Join(root, ".ci/run")); err != nil || !regexp.MustCompile(`(?m)^\s*go test -race -count=1 .*\./\.\.\.`).Match(ci) {
		t.Errorf(".ci/run does not run go test over ./... (%v)", err)
	}

	// The first screen (about 30 lines of a terminal) says what mcpd is,
	// gives the two commands, and the way to the console.
	first := strings.Join(strings.SplitN(readme, "\n", 31)[:30], "\n")
	for _, want := range []string{block[0], "http://127.0.0.1:8080/ui/"} {
		if !strings.Contains(first, want) {
			t.Errorf("the README's first 30 lines do not show %q", want)
		}
	}

	t.Chdir(root)
	r := runCLI(t, "test")
	// The README and docs/testing.md show the demo's mcpd test output.
	for _, doc := range []string{"README.md", "docs/testing.md"} {
		text, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		sample := regexp.MustCompile(`(?m)^\$ mcpd test .*\n(?:.*\n)*?(\d+ passed, \d+ failed)$`).FindStringSubmatch(string(text))
		if sample == nil {
			t.Errorf("no sample mcpd test output in %s", doc)
			continue
		}
		if r.code != 0 || !strings.Contains(r.stdout, sample[1]+"\n") {
			t.Errorf("mcpd test at the root says\n%s%s\n%s shows %q", r.stdout, r.stderr, doc, sample[1])
		}
	}
}

// `mcpd serve` on a port that is taken names the flag that picks another,
// instead of only "bind: address already in use".
func TestServePortInUse(t *testing.T) {
	clearEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := writeConfig(t, `tool "hello" {
  description = "Says hello"
  result {
    text = "'hello'"
  }
}
`)
	r := runCLI(t, "serve", "-c", dir, "--http", ln.Addr().String())
	if r.code == 0 {
		t.Fatalf("serve on a taken port exited 0: %+v", r)
	}
	for _, want := range []string{ln.Addr().String() + " is already in use", "--http", "address already in use"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	}
}
