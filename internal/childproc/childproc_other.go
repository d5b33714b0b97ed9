//go:build !linux

package childproc

import "os/exec"

// Harden does nothing here: there is no /proc to read another process's
// environment or memory through.
func Harden() error { return nil }

// Start is cmd.Start.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

// StartWith runs prepare, then cmd.Start.
func StartWith(cmd *exec.Cmd, prepare func() error) error {
	if prepare != nil {
		if err := prepare(); err != nil {
			return err
		}
	}
	return cmd.Start()
}
