package filesystem

import (
	"os"
	"strconv"
	"sync"
	"syscall"

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
// until release, so the name stays unique while the watch lives, and the
// directory's inode number cannot be reused meanwhile.
func (fs *FS) watchTarget(rel string) (watchTarget, error) {
	if !procFDs() {
		return fs.pathTarget(rel)
	}
	c, err := fs.dir.Walk(rel)
	if err != nil {
		return watchTarget{}, err
	}
	defer c.Close()
	var st unix.Stat_t
	if err := unix.Fstat(c.At(), &st); err != nil {
		return watchTarget{}, err
	}
	fd, err := unix.FcntlInt(uintptr(c.At()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return watchTarget{}, err
	}
	return watchTarget{
		path:    "/proc/self/fd/" + strconv.Itoa(fd),
		id:      dirID{dev: uint64(st.Dev), ino: uint64(st.Ino)},
		release: func() { unix.Close(fd) },
	}, nil
}

// pathID identifies the directory st by device and inode: inotify keeps one
// watch per inode, whatever name it was set through.
func pathID(_ string, st os.FileInfo) dirID {
	s := st.Sys().(*syscall.Stat_t)
	return dirID{dev: uint64(s.Dev), ino: uint64(s.Ino)}
}
