//go:build unix

package sandbox

import "golang.org/x/sys/unix"

// LinkNoReplace publishes from as to without replacing an existing to: a
// hard link, which fails with EEXIST, then the removal of from. On a
// filesystem without hard links it falls back to a rename, made only when an
// lstat finds no to just before it.
func LinkNoReplace(dirfd int, from, to string) error {
	err := RetryEINTR(func() error { return unix.Linkat(dirfd, from, dirfd, to, 0) })
	switch err {
	case nil:
		return RetryEINTR(func() error { return unix.Unlinkat(dirfd, from, 0) })
	case unix.EPERM, unix.ENOTSUP, unix.EMLINK:
		var st unix.Stat_t
		switch err := RetryEINTR(func() error { return unix.Fstatat(dirfd, to, &st, unix.AT_SYMLINK_NOFOLLOW) }); {
		case err == nil:
			return unix.EEXIST
		case err != unix.ENOENT:
			return err
		}
		return Renameat(dirfd, from, to)
	}
	return err
}

// Renameat renames from over to in the directory dirfd.
func Renameat(dirfd int, from, to string) error {
	return RetryEINTR(func() error { return unix.Renameat(dirfd, from, dirfd, to) })
}
