//go:build unix

package rg

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup makes rg the leader of a new process group, so that killGroup
// reaches whatever it starts as well.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills rg's process group. It is only called before rg is
// reaped, so the group's id cannot have passed to another process.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil {
		// No group (it was never made, or is gone): kill rg itself.
		return p.Kill()
	}
	return nil
}
