package deploytest

import (
	"context"
	"fmt"
	"maps"
	"net/http"
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

// publicHost is the name clients elsewhere reach the balancer by: not a
// loopback name, so the replicas admit it only with --allowed-host.
const publicHost = "mcp.example.test"

// replica is one mcpd process on a loopback port. keyFile, when set, is
// the API key file deploy/haproxy/auth.hcl reads, and the replica serves
// that auth block and admits publicHost, as docs/operations.md says.
type replica struct {
	id, addr, conf, data, keyFile string
	env                           []string // more environment, NAME=value
	cmd                           *exec.Cmd
	logs                          *logTail
	exited                        chan error
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	args := []string{"serve", "--http", r.addr, "-c", r.conf, "--log-level", "warn",
		"--shutdown-delay", shutdownDelay, "--shutdown-grace", shutdownGrace}
	if r.keyFile != "" {
		args = append(args, "-c", haproxyFile(t, "auth.hcl"), "--allowed-host", publicHost)
	}
	cmd := exec.Command(mcpdBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "REPLICA="+r.id, "MCPD_DATA_DIR="+r.data)
	cmd.Env = append(cmd.Env, r.env...)
	if r.keyFile != "" {
		cmd.Env = append(cmd.Env, "MCPD_API_KEY_FILE="+r.keyFile)
	}
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

// haproxyFile is the absolute path of a file in deploy/haproxy.
func haproxyFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "haproxy", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// remoteClient is how a client on another host reaches the balancer: by
// its public name, with the API key (none when key is "").
func remoteClient(key string) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Host = publicHost
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startHAProxy runs deploy/haproxy/haproxy.cfg, unchanged, in the
// foreground on a free loopback port in front of three replica addresses;
// it returns the balancer's address and log.
func startHAProxy(t *testing.T, replicas [3]string) (string, *logTail) {
	t.Helper()
	addr := freeAddr(t)
	lb := exec.Command("haproxy", "-db", "-f", haproxyFile(t, "haproxy.cfg"))
	lb.Env = append(os.Environ(), "MCPD_LB_BIND="+addr,
		"MCPD_REPLICA1="+replicas[0], "MCPD_REPLICA2="+replicas[1], "MCPD_REPLICA3="+replicas[2])
	logs := &logTail{}
	lbErr, _ := lb.StderrPipe()
	if err := lb.Start(); err != nil {
		t.Fatal(err)
	}
	go logs.follow(lbErr)
	t.Cleanup(func() {
		lb.Process.Signal(syscall.SIGTERM)
		lb.Wait()
		if t.Failed() {
			t.Logf("haproxy log:\n%s", logs)
		}
	})
	if err := waitHTTP(bounded(t, 15*time.Second), "http://"+addr+"/mcp"); err != nil {
		t.Fatalf("%v\nhaproxy:\n%s", err, logs)
	}
	return addr, logs
}

// The shipped balancer fails closed: replicas that serve without auth
// (on loopback, where mcpd allows it) are never taken into rotation, so
// nobody reaches their tools through it.
func TestHAProxyRefusesReplicasWithoutAuth(t *testing.T) {
	requireDeployTests(t, "haproxy")
	conf := configDir(t, map[string]string{"tools.hcl": scaleConfig})
	r := &replica{id: "open", addr: freeAddr(t), conf: conf, data: t.TempDir()}
	r.start(t)
	t.Cleanup(r.stop)
	lbAddr, lbLogs := startHAProxy(t, [3]string{r.addr, r.addr, r.addr})
	// Out of rotation within fall x inter (2 x 1s) of the balancer's start.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code := status("http://" + lbAddr + "/healthz")
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("through the balancer, a replica without auth still answers (%d) after 10s, want 503 (no server)\n%s", code, lbLogs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ctx := bounded(t, 10*time.Second)
	if _, err := connect(ctx, "http://"+lbAddr+"/mcp", "2026-07-28", nil); err == nil {
		t.Error("an MCP client connected through the balancer to a replica without auth")
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
	http              *http.Client
	stats             *loadStats
	changes           counter
	pin               atomic.Value // string: the replica of a legacy session
}

// connect opens a session with the SDK's default retries: a legacy
// client whose GET stream breaks reconnects it, and learns with a 404 that
// its session is gone when its replica is.
func (c *loadClient) connect(ctx context.Context) (*mcp.ClientSession, error) {
	return connectRetries(ctx, c.endpoint, c.version, c.changes.add, 0, c.http)
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
// addresses from the environment), served as docs/operations.md says (with
// deploy/haproxy/auth.hcl and --allowed-host), reached as by clients on
// other hosts (the API key, a public Host name; without the key: 401),
// under bounded load from stateless 2026-07-28 clients and 2025-11-25
// sessions:
//
//	reload: a config change in the shared directory reaches every replica,
//	        and every client hears exactly one tools/list_changed;
//	SIGTERM: one replica drains as in a rolling update: no call fails;
//	SIGKILL: one replica dies: only calls in flight on it fail, and calls
//	        started after the kill succeed at once on the others.
func TestHAProxyScaleOut(t *testing.T) {
	requireDeployTests(t, "haproxy")
	conf := configDir(t, map[string]string{"tools.hcl": scaleConfig})
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
	ctx := bounded(t, 3*time.Minute)
	client := remoteClient(key)
	// The replicas enter rotation once both checks pass (rise 2 x inter 1s).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		cs, err := connectRetries(ctx, endpoint, "2026-07-28", nil, -1, client)
		if err == nil {
			cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client with the API key and Host %s cannot connect through the balancer: %v", publicHost, err)
		}
	}
	// Without the key: 401 from the replica, through the balancer.
	if _, err := connectRetries(ctx, endpoint, "2026-07-28", nil, -1, remoteClient("")); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("a client without the API key: %v, want 401 Unauthorized", err)
	}

	// The load: 4 stateless clients and 4 legacy sessions.
	stateless, legacy := newLoadStats(), newLoadStats()
	var clients []*loadClient
	for i := 0; i < 8; i++ {
		c := &loadClient{endpoint: endpoint, version: "2026-07-28", http: client, stats: stateless}
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
			cs, err := connectRetries(ctx, "http://"+r.addr+"/mcp", "2026-07-28", nil, -1, client)
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
