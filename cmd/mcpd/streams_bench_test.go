package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStreamCost measures what one open subscriptions/listen stream
// costs the real `mcpd serve` process: resident memory and file
// descriptors, read from /proc before and after opening 200 streams from
// one caller (with the per-caller cap lifted). This is the figure behind
// the default --max-streams-per-caller.
func BenchmarkStreamCost(b *testing.B) {
	const streams = 200
	dir := b.TempDir()
	if err := os.WriteFile(dir+"/tools.hcl", []byte(opsConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "--ui=false", "-c", dir, "--max-streams-per-caller", "0", "--max-streams", "1000", "--max-conns", "1024")
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		urls := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
					select {
					case urls <- m[1]:
					default:
					}
				}
			}
		}()
		var endpoint string
		select {
		case endpoint = <-urls:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			b.Fatal("mcpd did not start")
		}
		// One call first, so that what is measured is the streams, not
		// the first request's warm-up.
		openListenStream(b, endpoint).Body.Close()
		time.Sleep(200 * time.Millisecond)
		rss0, fds0 := procCost(b, cmd.Process.Pid)
		var open []*http.Response
		for range streams {
			open = append(open, openListenStream(b, endpoint))
		}
		time.Sleep(500 * time.Millisecond)
		rss1, fds1 := procCost(b, cmd.Process.Pid)
		b.ReportMetric(float64(rss1-rss0)/streams, "KiB-RSS/stream")
		b.ReportMetric(float64(fds1-fds0)/streams, "fds/stream")
		for _, r := range open {
			r.Body.Close()
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
}

func openListenStream(b *testing.B, endpoint string) *http.Response {
	b.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`
	req, _ := http.NewRequestWithContext(context.Background(), "POST", endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b.Fatalf("listen: %d", resp.StatusCode)
	}
	// The acknowledgement: the stream is open on the server's side.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "event:") {
		b.Fatalf("listen stream: %q %v", line, err)
	}
	return resp
}

// procCost reads a process's resident memory (KiB) and open descriptors.
func procCost(b *testing.B, pid int) (rssKiB, fds int) {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			rssKiB, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatal(err)
	}
	return rssKiB, len(ents)
}
