package deploytest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scaleConfig is what every replica serves from one shared directory: a
// call that takes 50ms (a process) and names the replica that ran it.
const scaleConfig = `
server {
  name = "scale-test"
}

tool "work" {
  description = "Takes 50ms; answers with the replica's name"
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

// Drain settings of the replicas: the delay covers HAProxy's inter x fall
// (1s x 2) with a margin.
const (
	shutdownDelay = "3s"
	shutdownGrace = "10s"
)

// replica is one mcpd process on a loopback port.
type replica struct {
	id, addr, conf, data string
	cmd                  *exec.Cmd
	logs                 *logTail
	exited               chan error
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(mcpdBin, "serve", "--http", r.addr, "-c", r.conf, "--log-level", "warn",
		"--shutdown-delay", shutdownDelay, "--shutdown-grace", shutdownGrace)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "REPLICA="+r.id, "MCPD_DATA_DIR="+r.data)
	r.logs = &logTail{}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go r.logs.follow(stderr)
	r.cmd, r.exited = cmd, make(chan error, 1)
	go func() { r.exited <- cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for status("http://"+r.addr+"/readyz") != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s is not ready; its log:\n%s", r.id, r.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *replica) stop() {
	if r.cmd != nil && r.cmd.ProcessState == nil {
		r.cmd.Process.Kill()
		<-r.exited
	}
}

// loadStats counts what the clients saw, by kind of client.
type loadStats struct {
	calls, failed, reinit, misrouted atomic.Int64
	mu                               sync.Mutex
	failures                         []failure
	byReplica                        map[string]int
}

type failure struct {
	start, end time.Time
	err        string
}

func (s *loadStats) ok(replica string) {
	s.calls.Add(1)
	s.mu.Lock()
	s.byReplica[replica]++
	s.mu.Unlock()
}

func (s *loadStats) fail(start time.Time, err error) {
	s.failed.Add(1)
	s.mu.Lock()
	s.failures = append(s.failures, failure{start, time.Now(), err.Error()})
	s.mu.Unlock()
}

func (s *loadStats) snapshot() (calls, failed, reinit int64) {
	return s.calls.Load(), s.failed.Load(), s.reinit.Load()
}

func newLoadStats() *loadStats { return &loadStats{byReplica: map[string]int{}} }

// loadClient calls "work" in a loop until stop closes, over one SDK client
// session through the load balancer. A legacy client whose session is gone
// (404: its replica went away) starts a new session and retries the call
// once, as the protocol asks of clients; only a call that still fails
// counts as failed. A legacy session's calls must all reach the replica of
// its first call.
type loadClient struct {
	endpoint, version string
	stats             *loadStats
	changes           counter
	pin               atomic.Value // string: the replica of a legacy session
}

// connect opens a session with the SDK's default retries: a legacy
// client whose GET stream breaks reconnects it, and learns with a 404 that
// its session is gone when its replica is.
func (c *loadClient) connect(ctx context.Context) (*mcp.ClientSession, error) {
	return connectRetries(ctx, c.endpoint, c.version, c.changes.add, 0)
}

func (c *loadClient) run(ctx context.Context, stop <-chan struct{}) error {
	cs, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if cs != nil {
			cs.Close()
		}
	}()
	legacy := c.version == "2025-11-25"
	pinned := ""
	for {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return nil
		default:
		}
		start := time.Now()
		text, err := call(ctx, cs, "work", nil)
		if err != nil && legacy && isSessionMissing(err) {
			c.stats.reinit.Add(1)
			cs.Close()
			if cs, err = c.connect(ctx); err != nil {
				return fmt.Errorf("a new session: %w", err)
			}
			pinned = ""
			c.pin.Store("")
			text, err = call(ctx, cs, "work", nil)
		}
		switch {
		case err != nil:
			c.stats.fail(start, err)
			if legacy {
				c.stats.reinit.Add(1)
				cs.Close()
				if cs, err = c.connect(ctx); err != nil {
					return err
				}
				pinned = ""
				c.pin.Store("")
			}
		default:
			c.stats.ok(text)
			if legacy {
				if pinned == "" {
					pinned = text
					c.pin.Store(text)
				} else if text != pinned {
					c.stats.misrouted.Add(1)
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Three mcpd processes behind deploy/haproxy/haproxy.cfg (run unchanged,
// addresses from the environment), under bounded load from stateless
// 2026-07-28 clients and 2025-11-25 sessions:
//
//	reload: a config change in the shared directory reaches every replica,
//	        and every client hears exactly one tools/list_changed;
//	SIGTERM: one replica drains as in a rolling update: no call fails;
//	SIGKILL: one replica dies: only calls in flight on it fail, and calls
//	        started after the kill succeed at once on the others.
func TestHAProxyScaleOut(t *testing.T) {
	requireDeployTests(t, "haproxy")
	conf := configDir(t, map[string]string{"tools.hcl": scaleConfig})
	var replicas []*replica
	for i := 1; i <= 3; i++ {
		r := &replica{id: fmt.Sprintf("r%d", i), addr: freeAddr(t), conf: conf, data: t.TempDir()}
		r.start(t)
		t.Cleanup(r.stop)
		replicas = append(replicas, r)
	}
	lbAddr := freeAddr(t)
	cfg, err := filepath.Abs(filepath.Join("..", "haproxy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	lb := exec.Command("haproxy", "-db", "-f", cfg)
	lb.Env = append(os.Environ(), "MCPD_LB_BIND="+lbAddr,
		"MCPD_REPLICA1="+replicas[0].addr, "MCPD_REPLICA2="+replicas[1].addr, "MCPD_REPLICA3="+replicas[2].addr)
	lbLogs := &logTail{}
	lbErr, _ := lb.StderrPipe()
	if err := lb.Start(); err != nil {
		t.Fatal(err)
	}
	go lbLogs.follow(lbErr)
	t.Cleanup(func() {
		lb.Process.Signal(syscall.SIGTERM)
		lb.Wait()
		if t.Failed() {
			t.Logf("haproxy log:\n%s", lbLogs)
			for _, r := range replicas {
				t.Logf("replica %s log:\n%s", r.id, r.logs)
			}
		}
	})
	endpoint := "http://" + lbAddr + "/mcp"
	ctx := bounded(t, 3*time.Minute)
	if err := waitHTTP(bounded(t, 15*time.Second), endpoint); err != nil {
		t.Fatalf("%v\nhaproxy:\n%s", err, lbLogs)
	}

	// The load: 4 stateless clients and 4 legacy sessions.
	stateless, legacy := newLoadStats(), newLoadStats()
	var clients []*loadClient
	for i := 0; i < 8; i++ {
		c := &loadClient{endpoint: endpoint, version: "2026-07-28", stats: stateless}
		if i%2 == 1 {
			c.version, c.stats = "2025-11-25", legacy
		}
		clients = append(clients, c)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, len(clients))
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.run(ctx, stop); err != nil {
				errs <- err
			}
		}()
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopLoad)
	// Round robin: the stateless calls soon reach every replica.
	spread := func() map[string]int {
		stateless.mu.Lock()
		defer stateless.mu.Unlock()
		return maps.Clone(stateless.byReplica)
	}
	for deadline := time.Now().Add(10 * time.Second); len(spread()) < 3 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if got := spread(); len(got) != 3 {
		t.Errorf("stateless calls reached %v in 10s, want all 3 replicas (round robin)", got)
	}
	time.Sleep(time.Second) // the legacy clients' GET streams are open

	type phase struct {
		name                           string
		statelessCalls, statelessFails int64
		legacyCalls, legacyFails       int64
		reinit                         int64
		failedAfter                    int // calls that started more than 100ms after the event and failed
	}
	var phases []phase
	measure := func(name string, event func() time.Time, settle time.Duration) phase {
		sc0, sf0, _ := stateless.snapshot()
		lc0, lf0, lr0 := legacy.snapshot()
		at := event()
		time.Sleep(settle)
		sc1, sf1, _ := stateless.snapshot()
		lc1, lf1, lr1 := legacy.snapshot()
		p := phase{name: name, statelessCalls: sc1 - sc0, statelessFails: sf1 - sf0,
			legacyCalls: lc1 - lc0, legacyFails: lf1 - lf0, reinit: lr1 - lr0}
		for _, s := range []*loadStats{stateless, legacy} {
			s.mu.Lock()
			for _, f := range s.failures {
				if f.start.After(at.Add(100 * time.Millisecond)) {
					p.failedAfter++
					t.Logf("%s: a call started %v after the event failed: %s", name, f.start.Sub(at).Round(time.Millisecond), f.err)
				}
			}
			s.failures = nil
			s.mu.Unlock()
		}
		phases = append(phases, p)
		return p
	}

	// The victim of a phase is the replica that holds the most legacy
	// sessions, so that each phase shows what becomes of them.
	victim := func() (*replica, int) {
		pinned := map[string]int{}
		for _, c := range clients {
			if id, _ := c.pin.Load().(string); id != "" {
				pinned[id]++
			}
		}
		best := replicas[0]
		for _, r := range replicas {
			if pinned[r.id] > pinned[best.id] {
				best = r
			}
		}
		return best, pinned[best.id]
	}

	// Reload: one edit of the shared directory.
	t.Run("reload", func(t *testing.T) {
		for _, c := range clients {
			c.changes.reset()
		}
		writeAtomic(t, filepath.Join(conf, "tools.hcl"), scaleConfig+addedTool)
		counters := make([]*counter, len(clients))
		for i, c := range clients {
			counters[i] = &c.changes
		}
		waitCount(bounded(t, 15*time.Second), counters, 1)
		for i, c := range clients {
			if n := c.changes.get(); n != 1 {
				t.Errorf("client %d (%s): %d tools/list_changed, want 1", i, c.version, n)
			}
		}
		for _, r := range replicas {
			cs, err := connect(ctx, "http://"+r.addr+"/mcp", "2026-07-28", nil)
			if err != nil {
				t.Fatal(err)
			}
			if names, err := toolNames(ctx, cs); err != nil || !slices.Contains(names, "added") {
				t.Errorf("replica %s lists %v, %v; want the added tool", r.id, names, err)
			}
			cs.Close()
		}
	})

	// Rolling update: SIGTERM, drain, exit, start again.
	t.Run("sigterm", func(t *testing.T) {
		r, sessions := victim()
		var exitErr error
		var drained time.Duration
		p := measure("SIGTERM", func() time.Time {
			at := time.Now()
			r.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case exitErr = <-r.exited:
			case <-time.After(30 * time.Second):
				t.Fatal("the replica did not exit within 30s of SIGTERM")
			}
			drained = time.Since(at)
			return at
		}, time.Second)
		if exitErr != nil {
			t.Errorf("the replica exited with %v after SIGTERM, want 0", exitErr)
		}
		if p.statelessFails != 0 || p.legacyFails != 0 {
			t.Errorf("a rolling update failed %d stateless and %d legacy calls, want none", p.statelessFails, p.legacyFails)
		}
		t.Logf("SIGTERM to %s (holding %d of 4 legacy sessions): it drained and exited in %v; %d stateless and %d legacy calls, %d failed; %d sessions re-initialized",
			r.id, sessions, drained.Round(10*time.Millisecond), p.statelessCalls, p.legacyCalls, p.statelessFails+p.legacyFails, p.reinit)
		r.start(t)
	})

	// A crash: SIGKILL.
	t.Run("sigkill", func(t *testing.T) {
		r, sessions := victim()
		p := measure("SIGKILL", func() time.Time {
			at := time.Now()
			r.cmd.Process.Kill()
			<-r.exited
			return at
		}, 3*time.Second)
		if failed := p.statelessFails + p.legacyFails; failed > int64(len(clients)) {
			t.Errorf("%d calls failed, more than the %d that can be in flight at once", failed, len(clients))
		}
		if p.failedAfter != 0 {
			t.Errorf("%d calls started after the kill failed, want 0: new calls must go to the others", p.failedAfter)
		}
		t.Logf("SIGKILL to %s (holding %d of 4 legacy sessions): %d stateless and %d legacy calls in 3s; %d stateless and %d legacy failed (in flight on the killed replica); %d sessions re-initialized; %d calls started after the kill failed",
			r.id, sessions, p.statelessCalls, p.legacyCalls, p.statelessFails, p.legacyFails, p.reinit, p.failedAfter)
		r.start(t)
	})

	time.Sleep(3 * time.Second) // the restarted replicas take calls again
	stopLoad()
	close(errs)
	for err := range errs {
		t.Errorf("a client could not connect: %v", err)
	}
	if n := legacy.misrouted.Load(); n != 0 {
		t.Errorf("%d legacy calls reached another replica than their session's: the stick table does not hold", n)
	}
	stateless.mu.Lock()
	t.Logf("in all: %d stateless calls (by replica %v), %d legacy calls (by replica %v), %d legacy sessions re-initialized",
		stateless.calls.Load(), stateless.byReplica, legacy.calls.Load(), legacy.byReplica, legacy.reinit.Load())
	stateless.mu.Unlock()
	if len(stateless.byReplica) != 3 {
		t.Errorf("stateless calls reached %v", stateless.byReplica)
	}
}
