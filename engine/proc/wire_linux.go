package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// The socket between mcpd and its helper is a SOCK_SEQPACKET pair, which
// keeps message boundaries and carries file descriptors. A message larger
// than a packet (a start's argv and environment can be) is sent as chunks:
// each packet's first byte is chunkMore or chunkLast, and the descriptors
// ride on the first packet.
const (
	chunkMore = 1
	chunkLast = 0
	chunkSize = 32 << 10
	// maxMessage bounds what one message may add up to: the kernel
	// already bounds argv and environment to a few MB.
	maxMessage = 64 << 20
)

// request is a message from mcpd to the helper.
type request struct {
	Op   string   `json:"op"` // "start" or "signal"
	ID   uint64   `json:"id"`
	Path string   `json:"path,omitempty"`
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// Streams says which of stdin, stdout and stderr came as descriptors,
	// in that order: "io-" has stdin and stdout and no stderr.
	Streams string `json:"streams,omitempty"`
	Sig     int    `json:"sig,omitempty"`
}

// reply is a message from the helper to mcpd.
type reply struct {
	Op     string `json:"op"` // "started" or "exited"
	ID     uint64 `json:"id"`
	Pid    int    `json:"pid,omitempty"`
	Err    string `json:"err,omitempty"`   // started: why the program did not start
	ErrOp  string `json:"errOp,omitempty"` // started: the failed step of an *os.PathError
	Errno  int    `json:"errno,omitempty"` // started: its errno
	Status uint32 `json:"status"`          // exited: the wait status
}

// send writes v as one message, with fds on its first packet.
func send(c *net.UnixConn, v any, fds []int) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	pkt := make([]byte, 0, min(len(data), chunkSize)+1)
	for {
		n := min(len(data), chunkSize)
		flag := byte(chunkMore)
		if n == len(data) {
			flag = chunkLast
		}
		pkt = append(append(pkt[:0], flag), data[:n]...)
		if _, _, err := c.WriteMsgUnix(pkt, oob, nil); err != nil {
			return err
		}
		oob, data = nil, data[n:]
		if flag == chunkLast {
			return nil
		}
	}
}

// receive reads one message into v and returns the descriptors that came
// with it, which the caller owns.
func receive(c *net.UnixConn, v any, buf []byte) (fds []int, err error) {
	var data []byte
	oob := make([]byte, syscall.CmsgSpace(3*4))
	defer func() {
		if err != nil {
			closeFDs(fds)
			fds = nil
		}
	}()
	for {
		n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil {
			return fds, err
		}
		if n == 0 {
			return fds, errors.New("empty packet") // EOF on a SEQPACKET socket
		}
		if oobn > 0 {
			got, err := parseRights(oob[:oobn])
			fds = append(fds, got...)
			if err != nil {
				return fds, err
			}
		}
		if flags&syscall.MSG_CTRUNC != 0 {
			return fds, errors.New("descriptors truncated")
		}
		if len(data)+n > maxMessage {
			return fds, fmt.Errorf("message over %d bytes", maxMessage)
		}
		data = append(data, buf[1:n]...)
		if buf[0] == chunkLast {
			return fds, json.Unmarshal(data, v)
		}
	}
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		got, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			return fds, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
