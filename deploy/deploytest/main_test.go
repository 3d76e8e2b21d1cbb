package deploytest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpdBin is the mcpd binary built for this run (MCPD_DEPLOY_TESTS=1 only).
var mcpdBin string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		if os.Getenv("MCPD_DEPLOY_TESTS") != "1" {
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "mcpd-deploytest")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		mcpdBin = filepath.Join(dir, "mcpd")
		build := exec.Command("go", "build", "-o", mcpdBin, "github.com/mcpd/mcpd/cmd/mcpd")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building mcpd:", err)
			return 1
		}
		return m.Run()
	}())
}

// requireDeployTests skips unless MCPD_DEPLOY_TESTS=1 and the programs are
// installed.
func requireDeployTests(t *testing.T, programs ...string) {
	t.Helper()
	if os.Getenv("MCPD_DEPLOY_TESTS") != "1" {
		skipOrFail(t, "deployment tests run with MCPD_DEPLOY_TESTS=1 (.ci/run's deploy step); they need podman, runc, iptables and haproxy")
	}
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			skipOrFail(t, fmt.Sprintf("%s is not installed (apt-get install %s): %v", p, aptPackages, err))
		}
	}
}

// aptPackages are the Debian packages the tests need, as .ci/run installs
// them: without iptables, netavark cannot set up a container's network and
// podman run fails.
const aptPackages = "podman runc iptables haproxy uidmap slirp4netns netavark aardvark-dns catatonit busybox-static zip"

// skipOrFail skips, saying why, unless MCPD_TEST_REQUIRE_DEPLOY=1 (set by
// .ci/run where it could install everything): there a skip would hide a
// deployment CI never tested, so it fails instead.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("MCPD_TEST_REQUIRE_DEPLOY") == "1" {
		t.Fatalf("MCPD_TEST_REQUIRE_DEPLOY=1, and this test cannot run: %s", why)
	}
	t.Skip(why)
}

// testImage is the image under test, built by deploy/build-image.sh.
func testImage(t *testing.T) string {
	t.Helper()
	requireDeployTests(t, "podman")
	img := os.Getenv("MCPD_TEST_IMAGE")
	if img == "" {
		skipOrFail(t, "MCPD_TEST_IMAGE is not set: build an image with deploy/build-image.sh and name it there")
	}
	return img
}

// bounded is a context that ends the test's waits.
func bounded(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// configDir writes files into a new directory that the container's user
// (65532) can read, unlike t.TempDir's.
func configDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpd-deploy-conf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		writeAtomic(t, filepath.Join(dir, name), text)
	}
	return dir
}

// writeAtomic replaces a file the way editors and kubelet do: write
// beside it, then rename.
func writeAtomic(t *testing.T, path, text string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// freeAddr is a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHTTP waits until url answers any HTTP status.
func waitHTTP(ctx context.Context, url string) error {
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer: %w", url, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// status is the HTTP status of a GET, or 0 if none came.
func status(url string) int {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// connect opens an SDK client session of the given protocol version over
// Streamable HTTP. onChange, when not nil, hears tools/list_changed.
func connect(ctx context.Context, endpoint, version string, onChange func()) (*mcp.ClientSession, error) {
	return connectRetries(ctx, endpoint, version, onChange, -1, nil)
}

// connectRetries is connect with the SDK's MaxRetries for its streams (0:
// the SDK's default; -1: none) and an HTTP client (nil: the default).
func connectRetries(ctx context.Context, endpoint, version string, onChange func(), retries int, hc *http.Client) (*mcp.ClientSession, error) {
	var opts *mcp.ClientOptions
	if onChange != nil {
		opts = &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { onChange() }}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "deploytest", Version: "1"}, opts)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: retries, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
}

var eras = []string{"2025-11-25", "2026-07-28"}

func toolNames(ctx context.Context, cs *mcp.ClientSession) ([]string, error) {
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names, nil
}

// call runs a tool and returns its text, failing on any error.
func call(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	text := textOf(res)
	if res.IsError {
		return "", fmt.Errorf("tool %s: isError: %s", name, text)
	}
	return text, nil
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// counter counts notifications and signals each one.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add()     { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) get() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }
func (c *counter) reset()   { c.mu.Lock(); c.n = 0; c.mu.Unlock() }

// waitCount waits until every counter reached want or ctx ends, then a
// little longer, so that a second notification would be seen.
func waitCount(ctx context.Context, counters []*counter, want int) {
	for {
		done := true
		for _, c := range counters {
			if c.get() < want {
				done = false
			}
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(700 * time.Millisecond)
}

// logTail keeps the last lines a process wrote, for failure messages.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) follow(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		if len(l.lines) > 200 {
			l.lines = l.lines[len(l.lines)-200:]
		}
		l.mu.Unlock()
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func isSessionMissing(err error) bool { return errors.Is(err, mcp.ErrSessionMissing) }
