package deploytest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
)

// sharedConfig is scaleConfig with a state block: "limited" allows each
// caller 10 calls a minute across all replicas; "work" has a per_tool rate
// far above the load, so that every call of the rolling restart goes
// through Redis too.
const sharedConfig = `
server {
  name = "scale-test"
  state {
    redis      = env("MCPD_REDIS_URL")
    key_prefix = env("MCPD_STATE_PREFIX")
  }
}

tool "limited" {
  description = "Answers with the replica's name; 10 calls a minute per caller"
  rate_limit {
    per_caller = "10/m"
  }
  shell {
    command = ["true"]
  }
  result {
    content "text" {
      text = "${env("REPLICA", "?")}"
    }
  }
}

tool "work" {
  description = "Takes 50ms; answers with the replica's name"
  rate_limit {
    per_tool = "100000/m"
  }
  shell {
    command = ["sleep", "0.05"]
  }
  result {
    content "text" {
      text = "${env("REPLICA", "?")}"
    }
  }
}
`

// Three mcpd processes behind deploy/haproxy/haproxy.cfg and one Redis
// (the state block): a caller's per_caller = "10/m" holds across the
// replicas, to within one call, whichever replica each call reaches; and
// a rolling restart (SIGTERM, drain, start again) under load loses no
// call, with every call's limit checked in Redis.
func TestHAProxySharedLimits(t *testing.T) {
	requireDeployTests(t, "haproxy")
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	conf := configDir(t, map[string]string{"tools.hcl": sharedConfig})
	const key = "deploytest-api-key-0123456789"
	keyFile := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var replicas []*replica
	for i := 1; i <= 3; i++ {
		r := &replica{id: fmt.Sprintf("r%d", i), addr: freeAddr(t), conf: conf, data: t.TempDir(), keyFile: keyFile,
			env: []string{"MCPD_REDIS_URL=" + url, "MCPD_STATE_PREFIX=" + prefix}}
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
	ctx := bounded(t, 3*time.Minute)
	client := remoteClient(key)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		cs, err := connectRetries(ctx, endpoint, "2026-07-28", nil, -1, client)
		if err == nil {
			cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cannot connect through the balancer: %v", err)
		}
	}

	t.Run("global per_caller", func(t *testing.T) {
		// Stateless requests are balanced round robin: 30 calls reach all
		// three replicas; per replica the limit would admit 30.
		cs, err := connectRetries(ctx, endpoint, "2026-07-28", nil, -1, client)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		admitted, byReplica := 0, map[string]int{}
		var refusal string
		start := time.Now()
		for i := 0; i < 30; i++ {
			text, err := call(ctx, cs, "limited", nil)
			switch {
			case err == nil:
				admitted++
				byReplica[text]++
			case strings.Contains(err.Error(), "rate limited (10/m per caller)"):
				refusal = err.Error()
			default:
				t.Fatalf("call %d: %v", i, err)
			}
		}
		elapsed := time.Since(start)
		// 10 at once, plus one more per 6s of the run: "within one call"
		// on a run shorter than 6s.
		extra := int(elapsed / (6 * time.Second))
		if admitted < 10 || admitted > 10+extra+1 {
			t.Errorf("admitted %d of 30 calls in %v across %v, want 10 (+%d refilled, +1)", admitted, elapsed.Round(time.Millisecond), byReplica, extra)
		}
		if len(byReplica) < 2 {
			t.Errorf("admitted calls reached only %v: the test did not spread over replicas", byReplica)
		}
		if !strings.Contains(refusal, "retry in ") {
			t.Errorf("refusal %q does not say when to retry", refusal)
		}
		t.Logf("per_caller 10/m across 3 replicas: %d of 30 admitted in %v, spread %v; refusal: %s", admitted, elapsed.Round(time.Millisecond), byReplica, refusal)
	})

	t.Run("rolling restart", func(t *testing.T) {
		stats := newLoadStats()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			c := &loadClient{endpoint: endpoint, version: "2026-07-28", http: client, stats: stats}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.run(ctx, stop); err != nil {
					t.Error(err)
				}
			}()
		}
		time.Sleep(time.Second)
		for _, r := range replicas {
			r.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-r.exited:
				if err != nil {
					t.Errorf("replica %s exited with %v after SIGTERM", r.id, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("replica %s did not exit within 30s of SIGTERM", r.id)
			}
			r.start(t)
			// Back in rotation (rise 2 x inter 1s) before the next one goes.
			time.Sleep(3 * time.Second)
		}
		close(stop)
		wg.Wait()
		calls, failed, _ := stats.snapshot()
		if failed != 0 || calls == 0 {
			stats.mu.Lock()
			t.Errorf("rolling restart: %d calls, %d failed, want none failed: %v", calls, failed, stats.failures)
			stats.mu.Unlock()
		}
		t.Logf("rolling restart of 3 replicas with shared limits: %d calls, %d failed, by replica %v", calls, failed, stats.byReplica)
	})
}
