package rg

import (
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procFD reports whether /proc is mounted, so that /proc/self/fd names this
// process's descriptors.
var procFD = sync.OnceValue(func() bool {
	var st unix.Statfs_t
	return unix.Statfs("/proc/self/fd", &st) == nil && st.Type == unix.PROC_SUPER_MAGIC
})

// DirOf returns a working directory for Start that is the directory open as
// fd, whatever its path leads to by then, and true; or false where there is
// no such name.
//
// On Linux it is /proc/self/fd/N. The child resolves that name itself, in
// its own /proc/self, with a copy of this process's descriptors: Go's
// fork/exec changes directory before it rearranges descriptors, and
// close-on-exec ones close only at the exec, so N is still fd then. fd must
// stay open until Start returns.
func DirOf(fd int) (string, bool) {
	if fd < 0 || !procFD() {
		return "", false
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), true
}
