//go:build !unix

package mcp

import "os/exec"

// setGroup does nothing where there are no process groups.
func setGroup(*exec.Cmd) {}

// signalGroup kills the server; without process groups, processes it
// started are not reached.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if kill {
		_ = cmd.Process.Kill()
	}
}
