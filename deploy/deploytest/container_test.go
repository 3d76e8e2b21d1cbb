package deploytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// containerConfig is the config the container tests mount at /etc/mcpd:
// a declared tool, a call that takes a while (counting in SQLite, since
// the image has no programs but mcpd), and a write to the data volume.
const containerConfig = `
server {
  name = "deploy-test"
}

database "data" {
  driver = "sqlite"
  dsn    = "file:${env("MCPD_DATA_DIR", ".mcpd")}/deploy-test.db"
  seed   = "CREATE TABLE hits (at TEXT);"
}

tool "hello" {
  description = "Says hello"
  result {
    content "text" {
      text = "hello from ${env("REPLICA", "the container")}"
    }
  }
}

tool "count" {
  description = "Counts to n in SQLite: a call that takes a while"
  param "n" {
    type    = "integer"
    minimum = 1
  }
  sql {
    database = "data"
    timeout  = "60s"
    query    = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :n) SELECT count(*) AS n FROM c"
  }
  result {
    structured = "rows[0]"
  }
}

tool "hit" {
  description = "Writes a row: the data directory is writable"
  sql {
    database  = "data"
    read_only = false
    query     = "INSERT INTO hits VALUES (datetime('now')) RETURNING (SELECT count(*) FROM hits) AS hits"
  }
  result {
    structured = "rows[0]"
  }
}
`

const addedTool = `
tool "added" {
  description = "Added while the container runs"
  result {
    content "text" {
      text = "added"
    }
  }
}
`

// podman runs podman and returns its trimmed output.
func podman(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "podman", args...).CombinedOutput()
	if err != nil {
		hint := ""
		if bytes.Contains(out, []byte("netavark")) && bytes.Contains(out, []byte("No such file or directory")) {
			hint = "\n(netavark runs iptables to set up the container's network: apt-get install iptables)"
		}
		return "", fmt.Errorf("podman %s: %w\n%s%s", strings.Join(args, " "), err, out, hint)
	}
	return strings.TrimSpace(string(out)), nil
}

// containerName is unique to this process and test.
func containerName(t *testing.T) string {
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"))
	return fmt.Sprintf("mcpd-deploytest-%d-%s", os.Getpid(), name)
}

// httpContainer starts the image detached with its port 8080 published on
// a loopback port and the config directory mounted read-only at
// /etc/mcpd, with a read-only root file system. It returns the container's
// name and its MCP endpoint; the container is removed (with its anonymous
// volume) when the test ends.
func httpContainer(t *testing.T, image, conf string, runArgs []string, serveArgs ...string) (name, endpoint string) {
	t.Helper()
	ctx := bounded(t, 60*time.Second)
	name = containerName(t)
	args := []string{"run", "-d", "--name", name, "--read-only", "-p", "127.0.0.1::8080", "-v", conf + ":/etc/mcpd:ro"}
	args = append(args, runArgs...)
	args = append(args, image, "serve")
	args = append(args, serveArgs...)
	if _, err := podman(ctx, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if t.Failed() {
			logs, _ := podman(ctx, "logs", name)
			t.Logf("container %s logs:\n%s", name, logs)
		}
		podman(ctx, "rm", "-f", "-v", name)
	})
	hostPort, err := podman(ctx, "port", name, "8080/tcp")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + strings.TrimSpace(strings.Split(hostPort, "\n")[0])
	if err := waitHTTP(ctx, base+"/mcp"); err != nil {
		logs, _ := podman(ctx, "logs", name)
		t.Fatalf("%v\ncontainer logs:\n%s", err, logs)
	}
	return name, base + "/mcp"
}

// inspect reads one field of podman inspect.
func inspect(t *testing.T, name, format string) string {
	t.Helper()
	out, err := podman(bounded(t, 30*time.Second), "inspect", "--format", format, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// procStatus reads a field of /proc/PID/status of the container's main
// process, from the host: the image has no programs to ask inside.
func procStatus(t *testing.T, name, field string) string {
	t.Helper()
	pid := inspect(t, name, "{{.State.Pid}}")
	b, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	t.Fatalf("no %s in /proc/%s/status", field, pid)
	return ""
}

// The image as built: labels from git, the non-root user, the entrypoint,
// and the environment that makes `serve` listen on 0.0.0.0:8080 with the
// config in /etc/mcpd. The demo config it ships validates.
func TestImage(t *testing.T) {
	image := testImage(t)
	ctx := bounded(t, 60*time.Second)
	out, err := podman(ctx, "image", "inspect", "--format", "{{json .Config}}", image)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		User       string
		Env        []string
		Entrypoint []string
		Cmd        []string
		WorkingDir string
		Labels     map[string]string
		Volumes    map[string]any
	}
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if cfg.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532", cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/mcpd"}) || !slices.Equal(cfg.Cmd, []string{"serve"}) {
		t.Errorf("Entrypoint %q Cmd %q, want [/mcpd] [serve]", cfg.Entrypoint, cfg.Cmd)
	}
	for _, kv := range []string{"MCPD_CONFIG=/etc/mcpd", "MCPD_HTTP=0.0.0.0:8080", "MCPD_INSECURE_NO_AUTH=1", "MCPD_DATA_DIR=/var/lib/mcpd"} {
		if !slices.Contains(cfg.Env, kv) {
			t.Errorf("Env %q lacks %s", cfg.Env, kv)
		}
	}
	if _, ok := cfg.Volumes["/var/lib/mcpd"]; !ok {
		t.Errorf("Volumes = %v, want /var/lib/mcpd", cfg.Volumes)
	}
	if rev := cfg.Labels["org.opencontainers.image.revision"]; !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(rev) {
		t.Errorf("revision label %q is not a commit", rev)
	}
	for _, l := range []string{"version", "source", "created", "title"} {
		if cfg.Labels["org.opencontainers.image."+l] == "" {
			t.Errorf("label org.opencontainers.image.%s is missing: %v", l, cfg.Labels)
		}
	}
	version, err := podman(ctx, "run", "--rm", image, "version")
	if err != nil {
		t.Fatal(err)
	}
	// "mcpd VERSION (commit REVISION, goX.Y.Z)": build-image.sh links both in.
	rev := cfg.Labels["org.opencontainers.image.revision"]
	if want := "mcpd " + cfg.Labels["org.opencontainers.image.version"] + " (commit " + rev[:min(12, len(rev))]; !strings.HasPrefix(version, want) {
		t.Errorf("mcpd version says %q, want it to start with %q (the labels)", version, want)
	}
	// MCPD_CONFIG=/etc/mcpd: the demo shipped in the image, found without -c.
	valid, err := podman(ctx, "run", "--rm", "--read-only", image, "validate")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(valid, "/etc/mcpd/tools.hcl: valid") {
		t.Errorf("validate in the image said %q", valid)
	}
}

// `podman run -i` as a desktop host would run it: the SDK client talks
// JSON-RPC over the container's stdin and stdout, in both eras, and
// nothing else ever appears on stdout.
func TestContainerStdio(t *testing.T) {
	image := testImage(t)
	conf := configDir(t, map[string]string{"tools.hcl": containerConfig})
	for _, version := range eras {
		t.Run(version, func(t *testing.T) {
			ctx := bounded(t, 60*time.Second)
			cmd := exec.Command("podman", "run", "-i", "--rm", "--read-only", "-v", conf+":/etc/mcpd:ro",
				image, "serve", "--stdio", "-c", "/etc/mcpd")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr logTail
			errPipe, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go stderr.follow(errPipe)
			var raw bytes.Buffer
			var rawMu sync.Mutex
			pr, pw := io.Pipe()
			go func() {
				// Copy stdout to the client and keep every byte.
				buf := make([]byte, 32<<10)
				for {
					n, err := stdout.Read(buf)
					if n > 0 {
						rawMu.Lock()
						raw.Write(buf[:n])
						rawMu.Unlock()
						pw.Write(buf[:n])
					}
					if err != nil {
						pw.CloseWithError(err)
						return
					}
				}
			}()
			client := mcp.NewClient(&mcp.Implementation{Name: "deploytest", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: pr, Writer: stdin}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
			}
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s", got)
			}
			names, err := toolNames(ctx, cs)
			if err != nil || !slices.Equal(names, []string{"count", "hello", "hit"}) {
				t.Errorf("tools/list = %v, %v", names, err)
			}
			if text, err := call(ctx, cs, "hello", nil); err != nil || text != "hello from the container" {
				t.Errorf("hello = %q, %v", text, err)
			}
			if text, err := call(ctx, cs, "hit", nil); err != nil || text != `{"hits":1}` {
				t.Errorf("hit = %q, %v (the data volume must be writable with a read-only root)", text, err)
			}
			cs.Close() // closes stdin: mcpd exits
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the container exited with %v\nstderr:\n%s", err, stderr.String())
				}
			case <-ctx.Done():
				cmd.Process.Kill()
				t.Fatal("the container did not exit when stdin closed")
			}
			rawMu.Lock()
			defer rawMu.Unlock()
			sc := bufio.NewScanner(&raw)
			lines := 0
			for sc.Scan() {
				lines++
				var msg struct {
					JSONRPC string `json:"jsonrpc"`
				}
				if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
					t.Errorf("stdout line %d is not JSON-RPC: %q", lines, sc.Text())
				}
			}
			if lines < 4 {
				t.Errorf("stdout had %d lines, want the answers to at least 4 requests", lines)
			}
		})
	}
}

// Streamable HTTP on the published port, both eras, as uid 65532 with a
// read-only root file system and no capabilities; --allowed-host admits
// one more Host name and the guard still refuses others.
func TestContainerHTTP(t *testing.T) {
	image := testImage(t)
	conf := configDir(t, map[string]string{"tools.hcl": containerConfig})
	name, endpoint := httpContainer(t, image, conf, nil, "--allowed-host", "mcp.example.com")
	for _, version := range eras {
		t.Run(version, func(t *testing.T) {
			ctx := bounded(t, 30*time.Second)
			cs, err := connect(ctx, endpoint, version, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s", got)
			}
			names, err := toolNames(ctx, cs)
			if err != nil || !slices.Equal(names, []string{"count", "hello", "hit"}) {
				t.Errorf("tools/list = %v, %v", names, err)
			}
			if text, err := call(ctx, cs, "hello", nil); err != nil || text != "hello from the container" {
				t.Errorf("hello = %q, %v", text, err)
			}
			if _, err := call(ctx, cs, "hit", nil); err != nil {
				t.Errorf("hit: %v (the data volume must be writable with a read-only root)", err)
			}
		})
	}
	for _, tc := range []struct {
		host string
		want int
	}{
		{"", http.StatusOK},
		{"mcp.example.com", http.StatusOK},
		{"evil.example.com", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Host %q: status %d, want %d", tc.host, resp.StatusCode, tc.want)
		}
	}
	if uid := procStatus(t, name, "Uid"); uid != "65532 65532 65532 65532" {
		t.Errorf("Uid = %s, want 65532", uid)
	}
	if caps := procStatus(t, name, "CapEff"); caps != "0000000000000000" {
		// Root in a container has capabilities; a non-root user has none.
		t.Errorf("CapEff = %s, want none", caps)
	}
	if ro := inspect(t, name, "{{.HostConfig.ReadonlyRootfs}}"); ro != "true" {
		t.Errorf("ReadonlyRootfs = %s", ro)
	}
}

// Editing the config on the host reaches the container through the bind
// mount (inotify works across it): a connected client of each era hears
// exactly one tools/list_changed and sees the new tool.
func TestContainerReload(t *testing.T) {
	image := testImage(t)
	conf := configDir(t, map[string]string{"tools.hcl": containerConfig})
	_, endpoint := httpContainer(t, image, conf, nil)
	ctx := bounded(t, 60*time.Second)
	var counters []*counter
	var sessions []*mcp.ClientSession
	for _, version := range eras {
		c := &counter{}
		cs, err := connect(ctx, endpoint, version, c.add)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		counters = append(counters, c)
		sessions = append(sessions, cs)
	}
	time.Sleep(300 * time.Millisecond) // the legacy client's GET stream opens beside Connect
	writeAtomic(t, filepath.Join(conf, "tools.hcl"), containerConfig+addedTool)
	waitCount(bounded(t, 15*time.Second), counters, 1)
	for i, c := range counters {
		if n := c.get(); n != 1 {
			t.Errorf("%s client: %d tools/list_changed, want 1", eras[i], n)
		}
		if text, err := call(ctx, sessions[i], "added", nil); err != nil || text != "added" {
			t.Errorf("%s client: the new tool answered %q, %v", eras[i], text, err)
		}
	}
}

// `podman stop` sends SIGTERM: calls in flight (in both eras) finish with
// their results, and the container exits 0 well within the grace period.
// Drain settings come from MCPD_SHUTDOWN_* so that the test runs on builds
// with and without those flags.
func TestContainerStop(t *testing.T) {
	image := testImage(t)
	conf := configDir(t, map[string]string{"tools.hcl": containerConfig})
	name, endpoint := httpContainer(t, image, conf,
		[]string{"-e", "MCPD_SHUTDOWN_DELAY=1s", "-e", "MCPD_SHUTDOWN_GRACE=30s"})
	ctx := bounded(t, 120*time.Second)

	// A count that takes about a second here, alone; four at once take
	// longer on a small machine. The first call opens the database.
	cs0, err := connect(ctx, endpoint, "2026-07-28", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(ctx, cs0, "count", map[string]any{"n": 1000}); err != nil {
		t.Fatal(err)
	}
	n := 1_000_000
	start := time.Now()
	if _, err := call(ctx, cs0, "count", map[string]any{"n": n}); err != nil {
		t.Fatal(err)
	}
	n = int(float64(n) * float64(time.Second) / float64(time.Since(start)))
	t.Logf("counting to %d takes about 1s", n)

	type outcome struct {
		text string
		err  error
		end  time.Time
	}
	results := make(chan outcome, 4)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		// The SDK's default stream retries, as real clients have: without
		// them a legacy client fails its pending calls as soon as its GET
		// stream ends, which the drain does right after the last answers,
		// and the client may see the end of the stream before the answer.
		cs, err := connectRetries(ctx, endpoint, eras[i%2], nil, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			text, err := call(ctx, cs, "count", map[string]any{"n": n})
			results <- outcome{text, err, time.Now()}
			cs.Close()
		}()
	}
	time.Sleep(500 * time.Millisecond)
	stopStart := time.Now()
	if _, err := podman(ctx, "stop", "-t", "40", name); err != nil {
		t.Fatal(err)
	}
	stopped := time.Since(stopStart)
	wg.Wait()
	close(results)
	want := fmt.Sprintf(`{"n":%d}`, n)
	for r := range results {
		if r.err != nil || r.text != want {
			t.Errorf("a call in flight at SIGTERM ended with %q, %v; want %s", r.text, r.err, want)
		}
		if r.end.Before(stopStart) {
			t.Errorf("a call ended before the stop began: it was not in flight")
		}
	}
	if code := inspect(t, name, "{{.State.ExitCode}}"); code != "0" {
		t.Errorf("exit code %s, want 0", code)
	}
	if stopped > 35*time.Second {
		t.Errorf("podman stop took %v: the grace period ran out", stopped)
	}
	t.Logf("podman stop returned after %v with 4 calls in flight", stopped.Round(10*time.Millisecond))
}
