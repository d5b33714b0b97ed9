package mcp

import "golang.org/x/sys/unix"

// awaitExit returns once the process pid has exited, leaving it a zombie,
// not reaped: until it is, its pid, which is the id of the group it leads,
// is no other process's. false: it could not be waited for so.
func awaitExit(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
