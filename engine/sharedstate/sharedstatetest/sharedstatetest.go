// Package sharedstatetest gives tests a real Redis: the shared one
// (MCPD_TEST_REDIS_URL, default redis://127.0.0.1:6379) with a key prefix of
// their own, or a private redis-server process they may kill and restart.
//
// Without a Redis the tests skip, unless MCPD_TEST_REQUIRE_REDIS=1 (CI),
// where they fail.
package sharedstatetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// URL returns the URL of the shared test Redis, skipping (or failing, when
// required) the test when it does not answer.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("MCPD_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("MCPD_TEST_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		unavailable(t, fmt.Sprintf("no Redis at %s: %v", opts.Addr, err))
	}
	return url
}

// Prefix returns a key prefix no other test (or run) uses, and deletes its
// keys when the test ends.
func Prefix(t testing.TB, url string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	p := "mcpdtest:" + hex.EncodeToString(b)
	t.Cleanup(func() {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return
		}
		c := redis.NewClient(opts)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, p+":*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return p
}

func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("MCPD_TEST_REQUIRE_REDIS") == "1" {
		t.Fatal(msg + " (MCPD_TEST_REQUIRE_REDIS=1)")
	}
	t.Skip(msg + " (set MCPD_TEST_REDIS_URL, or MCPD_TEST_REQUIRE_REDIS=1 to fail instead)")
}

// Server is a private redis-server process on a free port, without
// persistence, which a test may Kill and Start again on the same port.
type Server struct {
	Port int
	t    testing.TB
	cmd  *exec.Cmd
}

// NewServer starts a redis-server on a free port; it is killed when the
// test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		unavailable(t, "redis-server is not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{Port: port, t: t}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://127.0.0.1:" + strconv.Itoa(s.Port) }

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Start starts the server (again) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--loglevel", "warning")
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on port %d does not answer: %v", s.Port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Freeze stops the server (SIGSTOP): its connections stay open and its
// port accepts new ones (the kernel completes them), but nothing is
// answered, as a Redis stuck in a long command or a frozen VM. Thaw (or
// the test's end) continues it.
func (s *Server) Freeze() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("freezing redis-server: %v", err)
	}
	s.t.Cleanup(s.Thaw) // before Kill (cleanups run last first)
}

// Thaw continues a frozen server (SIGCONT).
func (s *Server) Thaw() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Kill kills the server (SIGKILL: no goodbye to its clients).
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}
