package sandbox

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// oPath lets a walk open a directory it may search but not read.
const oPath = unix.O_PATH

// openat2Missing is set once the kernel (or a seccomp filter) has refused
// openat2, which Linux has had since 5.6.
var openat2Missing atomic.Bool

// openDirBeneath opens the directory rel below dirfd in a single openat2 call
// that fails (ELOOP) on any symlink and never leaves dirfd, which is what a
// component-by-component O_NOFOLLOW walk guarantees, in one system call. ok
// is false when openat2 is unavailable and the caller must walk instead.
func openDirBeneath(dirfd int, rel string) (fd int, ok bool, err error) {
	if openat2Missing.Load() {
		return -1, false, nil
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	err = RetryEINTR(func() (err error) {
		fd, err = unix.Openat2(dirfd, rel, &how)
		return err
	})
	switch err {
	case nil:
		return fd, true, nil
	case unix.ENOSYS, unix.EPERM:
		openat2Missing.Store(true)
		return -1, false, nil
	case unix.EAGAIN, unix.EXDEV:
		return -1, false, nil // let the walk say what is wrong
	}
	return -1, true, err
}

// SetOpenat2Missing makes walks behave as on a kernel without openat2
// (missing true) or try it again (false); the tests use it to check that
// both ways give the same answers.
func SetOpenat2Missing(missing bool) { openat2Missing.Store(missing) }
