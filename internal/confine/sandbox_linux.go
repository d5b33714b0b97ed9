package confine

import (
	"os"
	"syscall"
)

// sandboxAttr starts the init in new user, mount, PID and (without
// Network) network namespaces, as the caller's uid and gid.
func sandboxAttr(p Policy) *syscall.SysProcAttr {
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID)
	if !p.Network {
		flags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Geteuid(), os.Getegid()
	return &syscall.SysProcAttr{
		Setsid:                     true,
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
}
