package sandbox

import "golang.org/x/sys/unix"

// renameNoReplace renames from to to in the directory dirfd, failing with
// EEXIST when to exists, atomically.
func renameNoReplace(dirfd int, from, to string) error {
	err := RetryEINTR(func() error { return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE) })
	if err == unix.EINVAL || err == unix.ENOSYS {
		return linkNoReplace(dirfd, from, to) // a filesystem without the flag
	}
	return err
}
