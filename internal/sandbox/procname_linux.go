package sandbox

import (
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procFDs reports whether /proc/self/fd can name descriptors (procfs is
// mounted).
var procFDs = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
})

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
	if !procFDs() {
		return ProcName{}, false, nil
	}
	c, err := d.Walk(rel)
	if err != nil {
		return ProcName{}, true, err
	}
	defer c.Close()
	id, err := c.Identity()
	if err != nil {
		return ProcName{}, true, err
	}
	fd, err := unix.FcntlInt(uintptr(c.At()), unix.F_DUPFD_CLOEXEC, 0)
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
