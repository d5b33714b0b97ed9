package filesystem

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

// watchTarget names the directory rel for fsnotify by a descriptor the
// no-follow walk reached: inotify follows the /proc/self/fd link to exactly
// that directory, whatever the path leads to by then. The descriptor is held
// until release, so the name stays unique while the watch lives.
func (fs *FS) watchTarget(rel string) (watchTarget, error) {
	if !procFDs() {
		return fs.pathTarget(rel)
	}
	c, err := fs.walk(rel)
	if err != nil {
		return watchTarget{}, err
	}
	defer c.close()
	fd, err := unix.FcntlInt(uintptr(c.at()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return watchTarget{}, err
	}
	return watchTarget{
		key:     "/proc/self/fd/" + strconv.Itoa(fd),
		release: func() { unix.Close(fd) },
	}, nil
}
