package serve

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// A pipe or a socket on stdin is read through the poller; reads see what
// the other end writes, then EOF, and Close ends a pending read. A regular
// file is left alone.
func TestPollable(t *testing.T) {
	pipe := func(t *testing.T) (in *os.File, reopen string, w io.WriteCloser) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r, fmt.Sprintf("/proc/self/fd/%d", r.Fd()), w
	}
	socket := func(t *testing.T) (in *os.File, reopen string, w io.WriteCloser) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := os.NewFile(uintptr(fds[0]), "socket-in")
		t.Cleanup(func() { r.Close() })
		return r, "", os.NewFile(uintptr(fds[1]), "socket-out")
	}
	for name, open := range map[string]func(*testing.T) (*os.File, string, io.WriteCloser){"pipe": pipe, "socket": socket} {
		t.Run(name, func(t *testing.T) {
			f, reopen, w := open(t)
			rc, ok := pollable(f, reopen)
			if !ok {
				t.Fatal("not pollable")
			}
			if _, err := w.Write([]byte("hello\n")); err != nil {
				t.Fatal(err)
			}
			w.Close()
			b, err := io.ReadAll(rc)
			if err != nil || string(b) != "hello\n" {
				t.Fatalf("read %q, %v", b, err)
			}
			rc.Close()

			// Close unblocks a read that waits for input.
			f, reopen, w = open(t)
			defer w.Close()
			rc, _ = pollable(f, reopen)
			done := make(chan error, 1)
			go func() {
				_, err := rc.Read(make([]byte, 8))
				done <- err
			}()
			time.Sleep(20 * time.Millisecond)
			rc.Close()
			select {
			case err := <-done:
				if err == nil {
					t.Error("read after Close succeeded")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not end the pending read")
			}
		})
	}
	t.Run("file", func(t *testing.T) {
		f, err := os.CreateTemp(t.TempDir(), "stdin")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, ok := pollable(f, f.Name()); ok {
			t.Error("a regular file was made pollable")
		}
	})
}
