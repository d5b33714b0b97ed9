package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox/internal/hook"
)

// oPath lets a walk open a directory it may search but not read.
const oPath = unix.O_PATH

// openDirBeneath opens the directory rel below dirfd in a single openat2 call
// that fails (ELOOP) on any symlink and never leaves dirfd, which is what a
// component-by-component O_NOFOLLOW walk guarantees, in one system call. ok
// is false when openat2 is unavailable and the caller must walk instead.
func openDirBeneath(dirfd int, rel string) (fd int, ok bool, err error) {
	if hook.NoOpenat2.Load() {
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
		hook.NoOpenat2.Store(true)
		return -1, false, nil
	case unix.EAGAIN, unix.EXDEV:
		return -1, false, nil // let the walk say what is wrong
	}
	return -1, true, err
}

// renameNoReplace renames from to to in the directory dirfd, failing with
// EEXIST when to exists, atomically.
func renameNoReplace(dirfd int, from, to string) error {
	err := RetryEINTR(func() error { return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE) })
	if err == unix.EINVAL || err == unix.ENOSYS {
		return linkNoReplace(dirfd, from, to) // a filesystem without the flag
	}
	return err
}
