//go:build !linux

package serve

import "io"

func pollableStdin() (io.ReadCloser, bool) { return nil, false }
