package sandbox

import (
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procMounted reports whether /proc is procfs, so that /proc/self/fd names
// this process's descriptors, to it and to a child.
var procMounted = sync.OnceValue(func() bool {
	var st unix.Statfs_t
	return unix.Statfs("/proc/self/fd", &st) == nil && st.Type == unix.PROC_SUPER_MAGIC
})

// WorkDir names the directory the cursor is at as a child's working
// directory, "/proc/self/fd/N": whatever its path leads to by then, the
// child starts in the very directory the cursor reached. The child resolves
// that name itself, in its own /proc/self, with a copy of this process's
// descriptors: Go's fork/exec changes directory before it rearranges
// descriptors, and close-on-exec ones close only at the exec, so N is still
// the cursor's then. The name is good until the cursor moves or closes. ok
// is false where /proc is not mounted.
func (c *Cursor) WorkDir() (string, bool) {
	if !procMounted() {
		return "", false
	}
	return "/proc/self/fd/" + strconv.Itoa(c.at()), true
}

// ProcName is a directory named by a descriptor the no-follow walk reached.
type ProcName struct {
	Path     string // "/proc/self/fd/N": the kernel follows it to exactly that directory
	Dev, Ino uint64 // the directory's identity
	Release  func() // closes the descriptor; the name is valid until then
}

// NameDir names the directory rel by a duplicate of the descriptor Walk
// reached, for an API that takes a path (inotify): whatever rel leads to
// later, the name leads to the directory that was walked to, and while it is
// held the directory's inode number cannot be reused. ok is false where
// /proc/self/fd is not mounted, and the caller must name rel another way.
func (d *Dir) NameDir(rel string) (n ProcName, ok bool, err error) {
	if !procMounted() {
		return ProcName{}, false, nil
	}
	c, err := d.Walk(rel)
	if err != nil {
		return ProcName{}, true, err
	}
	defer c.Close()
	id, err := c.identity()
	if err != nil {
		return ProcName{}, true, err
	}
	fd, err := unix.FcntlInt(uintptr(c.at()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return ProcName{}, true, err
	}
	return ProcName{
		Path:    "/proc/self/fd/" + strconv.Itoa(fd),
		Dev:     id.Dev,
		Ino:     id.Ino,
		Release: func() { unix.Close(fd) },
	}, true, nil
}
