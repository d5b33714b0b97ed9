//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setGroup starts the server in a process group of its own: a terminal's
// Ctrl-C does not reach it behind agentspec's back, and stopping it can
// reach every process it started.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM, or SIGKILL when kill is set, to the server's
// process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
