//go:build unix

package filesystem

import "golang.org/x/sys/unix"

// linkNoReplace publishes from as to without replacing an existing to: a
// hard link, which fails with EEXIST, then the removal of from. On a
// filesystem without hard links it falls back to a plain rename.
func linkNoReplace(dirfd int, from, to string) error {
	err := retryEINTR(func() error { return unix.Linkat(dirfd, from, dirfd, to, 0) })
	switch err {
	case nil:
		return retryEINTR(func() error { return unix.Unlinkat(dirfd, from, 0) })
	case unix.EPERM, unix.ENOTSUP, unix.EMLINK:
		return renameat(dirfd, from, to)
	}
	return err
}
