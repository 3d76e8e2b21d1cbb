package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one server process under test. Its command is split into words
// as a shell would (quotes group, no expansions); {addr} stands for the HTTP
// address the load generator chose. With a CPU it runs as
// `taskset -c CPU COMMAND`: taskset execs the command, so the PID the load
// generator reads /proc with is the server's own.
type server struct {
	cmd    *exec.Cmd
	pid    int
	addr   string // host:port for HTTP servers
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer
	exited chan struct{}
}

// startServer starts command. With stdio, the server's stdin and stdout are
// kept for the caller; otherwise they are closed (/dev/null).
func startServer(command, cpu string, stdio bool, env []string) (*server, error) {
	s := &server{stderr: &tailBuffer{max: 8 << 10}, exited: make(chan struct{})}
	if strings.Contains(command, "{addr}") {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		s.addr = addr
		command = strings.ReplaceAll(command, "{addr}", addr)
	}
	argv, err := splitWords(command)
	if err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("empty server command")
	}
	if cpu != "" {
		argv = append([]string{"taskset", "-c", cpu}, argv...)
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stderr = s.stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if stdio {
		if s.stdin, err = s.cmd.StdinPipe(); err != nil {
			return nil, err
		}
		if s.stdout, err = s.cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.pid = s.cmd.Process.Pid
	running.Store(s, true)
	go func() {
		s.cmd.Wait()
		running.Delete(s)
		close(s.exited)
	}()
	return s, nil
}

// running holds the servers started and not yet exited, for stopAll.
var running sync.Map

func init() {
	// Interrupted, the load generator stops its servers before it exits.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		running.Range(func(k, _ any) bool {
			syscall.Kill(-k.(*server).pid, syscall.SIGKILL)
			return true
		})
		os.Exit(130)
	}()
}

// stop ends the server: stdin EOF for stdio servers, then SIGTERM, then
// SIGKILL to its process group.
func (s *server) stop() {
	if s.stdin != nil {
		s.stdin.Close()
	}
	select {
	case <-s.exited:
		return
	case <-time.After(50 * time.Millisecond):
	}
	syscall.Kill(-s.pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(3 * time.Second):
		syscall.Kill(-s.pid, syscall.SIGKILL)
		<-s.exited
	}
}

func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// waitHTTP polls the server's address until it accepts connections.
func (s *server) waitHTTP(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !s.alive() {
			return fmt.Errorf("server exited: %s", s.stderr)
		}
		c, err := net.DialTimeout("tcp", s.addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("server did not listen on %s within %s: %s", s.addr, timeout, s.stderr)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const clockTick = 100

// withDescendants (-tree) makes the CPU times below count the server's
// live descendants too: a gateway benchmark's server command starts the
// upstream it fronts, and the figure that matters is the two together.
var withDescendants bool

// descendants returns the PIDs of pid's live descendants.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 {
			parent[child], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	frontier := []int{pid}
	for len(frontier) > 0 {
		p := frontier[0]
		frontier = frontier[1:]
		for c, pp := range parent {
			if pp == p {
				out = append(out, c)
				frontier = append(frontier, c)
			}
		}
	}
	return out
}

// treeCPU is f of pid, plus of its live descendants with -tree.
func treeCPU(pid int, f func(int) (time.Duration, error)) (time.Duration, error) {
	total, err := f(pid)
	if err != nil || !withDescendants {
		return total, err
	}
	for _, c := range descendants(pid) {
		if d, err := f(c); err == nil {
			total += d
		}
	}
	return total, nil
}

// cpuTime returns the CPU time (user + system) the process (with -tree,
// and its live descendants) has used, including exited threads.
func cpuTime(pid int) (time.Duration, error) { return treeCPU(pid, processCPU) }

func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from the closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTick, nil
}

// cpuTimeThreads returns the CPU time of the process's live threads, to the
// nanosecond (from /proc/PID/task/*/schedstat): precise enough for a
// startup, but blind to threads that have exited.
func cpuTimeThreads(pid int) (time.Duration, error) { return treeCPU(pid, threadsCPU) }

func threadsCPU(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total, nil
}

// memory returns the process's resident set size now and its peak, in bytes.
func memory(pid int) (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &peak
		default:
			continue
		}
		fs := strings.Fields(line)
		if len(fs) >= 2 {
			kb, _ := strconv.ParseInt(fs[1], 10, 64)
			*dst = kb << 10
		}
	}
	return rss, peak, sc.Err()
}

// tailBuffer keeps the last max bytes written to it (a server's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) == 0 {
		return "(no output on stderr)"
	}
	return "stderr:\n" + string(t.buf)
}

// splitWords splits a command line into words: blanks separate, single and
// double quotes group (no escapes inside single quotes; backslash escapes
// elsewhere).
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unbalanced quotes in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
