//go:build !linux

package mcpadapter

import "errors"

// startProcess: stdio upstreams are supervised with Linux's process groups
// and Pdeathsig; elsewhere only HTTP upstreams are supported.
func startProcess(c *serverConfig, stderr *stderrWriter) (*process, error) {
	return nil, errors.New("stdio upstreams (command) need Linux; use url with a Streamable HTTP server")
}
