package serve

import (
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is the SDK's stdio transport with a faster stdin. The
// SDK reads os.Stdin, which Go leaves in blocking mode (it is shared with
// the parent), so every read is a blocking system call that parks a thread
// and hands the processor to another one; over a pipe that doubled the
// latency of a call. pollableStdin gives the SDK a stdin read through the
// runtime's network poller instead, where the platform allows it without
// changing anything another process sees.
func stdioTransport() mcp.Transport {
	in, ok := pollableStdin()
	if !ok {
		return &mcp.StdioTransport{}
	}
	return &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{os.Stdout}}
}

// nopWriteCloser keeps stdout open when the session ends, as the SDK's
// stdio transport does.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
