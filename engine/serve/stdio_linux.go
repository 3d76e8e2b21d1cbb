package serve

import (
	"io"
	"net"
	"os"
	"syscall"
)

// pollableStdin returns stdin as a reader the runtime can poll, or false to
// keep os.Stdin:
//   - a pipe (how most hosts start a server) is opened anew through
//     /proc/self/fd/0, which gives this process its own open file
//     description of the same pipe, non-blocking, leaving the flags of the
//     one it inherited untouched;
//   - a socket (libuv-based hosts, such as Electron apps, pass a socket
//     pair) is wrapped with net.FileConn, which makes a non-blocking copy;
//     the socket's other end belongs to the host, which is not affected;
//   - anything else (a terminal, a file, /dev/null) stays as it is.
func pollableStdin() (io.ReadCloser, bool) {
	return pollable(os.Stdin, "/proc/self/fd/0")
}

func pollable(f *os.File, reopen string) (io.ReadCloser, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, false
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		p, err := os.OpenFile(reopen, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, false
		}
		return p, true
	case syscall.S_IFSOCK:
		c, err := net.FileConn(f)
		if err != nil {
			return nil, false
		}
		return c, true
	}
	return nil, false
}
