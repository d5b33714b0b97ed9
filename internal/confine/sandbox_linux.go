package confine

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sandboxAttr starts the init in new user, mount, PID, IPC and (without
// Network) network namespaces, as the caller's uid and gid. The IPC
// namespace keeps the host's System V shared memory, semaphores and
// message queues, which have no path Landlock or a mount could guard, out
// of reach.
//
// Root's init gets its id maps from here, as usual. Any other user's is
// started unmapped and maps itself (mapIDs): writing a child's maps means
// opening its /proc files, which the kernel gives to root alone while the
// child is not dumpable, as everything this process forks is
// (childproc.Harden). It keeps the capabilities it needs (mounts,
// emptying the bounding set) across its exec as ambient ones, since it
// runs as a uid other than its namespace's root.
func sandboxAttr(p Policy) (*syscall.SysProcAttr, *idMap) {
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC)
	if !p.Network {
		flags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Geteuid(), os.Getegid()
	attr := &syscall.SysProcAttr{Setsid: true, Cloneflags: flags}
	if uid == 0 {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		return attr, nil
	}
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	return attr, &idMap{UID: uid, GID: gid}
}

// idMap is what an unprivileged init maps in its own user namespace: the
// caller's uid and gid, to themselves.
type idMap struct{ UID, GID int }

// mapIDs writes the init's own id maps (setgroups denied first, as the
// kernel requires of an unprivileged gid map).
func mapIDs(m idMap) error {
	for _, w := range []struct{ file, data string }{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/uid_map", fmt.Sprintf("%d %d 1\n", m.UID, m.UID)},
		{"/proc/self/gid_map", fmt.Sprintf("%d %d 1\n", m.GID, m.GID)},
	} {
		if err := os.WriteFile(w.file, []byte(w.data), 0); err != nil {
			return fmt.Errorf("mapping the caller's ids in the command's user namespace: %w", err)
		}
	}
	return nil
}
