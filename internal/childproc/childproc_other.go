//go:build !linux

package childproc

import "os/exec"

// Harden does nothing here: there is no /proc to read another process's
// environment or memory through.
func Harden() error { return nil }

// Start is cmd.Start.
func Start(cmd *exec.Cmd) error { return cmd.Start() }
