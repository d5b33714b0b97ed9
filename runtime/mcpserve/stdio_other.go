//go:build !unix

package mcpserve

import (
	"io"
	"os"
)

// pollable reads f as it is: without the poller, Read cannot be interrupted.
func pollable(f *os.File) (io.Reader, func() error) { return f, nil }
