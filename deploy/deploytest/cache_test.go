package deploytest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
)

// cacheScaleConfig is a cached read-only tool whose every run appends a
// line to $CACHE_SCALE_COUNTER and answers with the replica that ran it;
// the replicas share their cache through the Redis at url.
func cacheScaleConfig(url, prefix string) string {
	return fmt.Sprintf(`
server {
  name = "cache-scale-test"
  state {
    redis      = %q
    key_prefix = %q
  }
}

tool "lookup" {
  description = "Looks a thing up; answers with the replica that computed it"
  annotations {
    read_only = true
  }
  param "q" {
    type = "string"
  }
  cache {
    ttl = "5m"
  }
  shell {
    command = ["/bin/sh", "-c", "echo run >> \"$CACHE_SCALE_COUNTER\"; echo \"$1 computed by $REPLICA\"", "sh", args.q]
    env     = { CACHE_SCALE_COUNTER = env("CACHE_SCALE_COUNTER"), REPLICA = env("REPLICA") }
  }
}
`, url, prefix)
}

// A cached result computed on one replica is served by the others
// through the shipped balancer, without running the tool again: the
// backend (a counter file) runs once per distinct call, and the replicas'
// own /metrics show hits on more than one of them.
func TestHAProxyCacheAcrossReplicas(t *testing.T) {
	requireDeployTests(t, "haproxy")
	url := sharedstatetest.URL(t)
	conf := configDir(t, map[string]string{"tools.hcl": cacheScaleConfig(url, sharedstatetest.Prefix(t, url))})
	counter := filepath.Join(t.TempDir(), "runs")
	t.Setenv("CACHE_SCALE_COUNTER", counter)
	const key = "deploytest-api-key-0123456789"
	keyFile := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var replicas []*replica
	for i := 1; i <= 3; i++ {
		r := &replica{id: fmt.Sprintf("r%d", i), addr: freeAddr(t), conf: conf, data: t.TempDir(), keyFile: keyFile}
		r.start(t)
		t.Cleanup(r.stop)
		replicas = append(replicas, r)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range replicas {
				t.Logf("replica %s log:\n%s", r.id, r.logs)
			}
		}
	})
	lbAddr, _ := startHAProxy(t, [3]string{replicas[0].addr, replicas[1].addr, replicas[2].addr})
	endpoint := "http://" + lbAddr + "/mcp"
	ctx := bounded(t, 2*time.Minute)
	var cs *mcp.ClientSession
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var err error
		if cs, err = connectRetries(ctx, endpoint, "2026-07-28", nil, -1, remoteClient(key)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cannot connect through the balancer: %v", err)
		}
	}
	defer cs.Close()

	// Stateless requests go round robin: 12 calls reach every replica.
	var first string
	for i := range 12 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"q": "answer"}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %v", i, err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !strings.HasPrefix(text, "answer computed by r") {
			t.Fatalf("call %d answered %q", i, text)
		}
		if i == 0 {
			first = text
		} else if text != first {
			t.Errorf("call %d answered %q, want the cached %q", i, text, first)
		}
	}
	b, _ := os.ReadFile(counter)
	if runs := strings.Count(string(b), "\n"); runs != 1 {
		t.Errorf("the tool ran %d times for 12 calls through 3 replicas, want 1", runs)
	}
	hitRE := regexp.MustCompile(`mcpd_tool_cache_lookups_total\{gen_ai_tool_name="lookup",result="hit"\} (\d+)`)
	withHits, total := 0, 0
	for _, r := range replicas {
		resp, err := http.Get("http://" + r.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := hitRE.FindSubmatch(body); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			total += n
			if n > 0 {
				withHits++
			}
		}
	}
	if total != 11 || withHits < 2 {
		t.Errorf("%d hits on %d replicas, want 11 on at least 2 (a result served by replicas that did not compute it)", total, withHits)
	}
}
