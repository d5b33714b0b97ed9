//go:build unix

package mcpserve

import (
	"io"
	"os"
	"syscall"
)

// pollable returns a reader for f whose Read the returned close function
// interrupts: a pipe or socket is switched to non-blocking mode so that Go's
// poller waits on it. Anything else (a terminal, whose mode the shell
// shares, or a regular file) is read as it is, and cannot be interrupted.
func pollable(f *os.File) (io.Reader, func() error) {
	st, err := f.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f, nil
	}
	// Close-on-exec, set under ForkLock as package os does, so that no
	// process started meanwhile (a late MCP server, a Shell command)
	// inherits a descriptor it could read the client's messages from.
	syscall.ForkLock.RLock()
	fd, err := syscall.Dup(int(f.Fd()))
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return f, nil
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return f, nil
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	return nf, nf.Close
}
