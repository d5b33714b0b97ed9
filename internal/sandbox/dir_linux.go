package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox/internal/hook"
)

// oPath lets a walk open a directory it may search but not read.
const oPath = unix.O_PATH

// beneath moves the cursor, at the root, to the directory rel in a single
// openat2 call that fails (ELOOP) on any symlink and never leaves the root,
// which is what a component-by-component O_NOFOLLOW walk guarantees, in one
// system call. ok is false when openat2 is unavailable and the caller must
// walk instead.
func (c *Cursor) beneath(rel string) (ok bool, err error) {
	if hook.NoOpenat2.Load() {
		return false, nil
	}
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	err = RetryEINTR(func() (err error) {
		fd, err = unix.Openat2(c.root, rel, &how)
		return err
	})
	switch err {
	case nil:
		c.fds = append(c.fds, fd)
		return true, nil
	case unix.ENOSYS, unix.EPERM:
		hook.NoOpenat2.Store(true)
		return false, nil
	case unix.EAGAIN, unix.EXDEV:
		return false, nil // let the walk say what is wrong
	}
	return true, err
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
