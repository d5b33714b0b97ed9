//go:build unix

package sandbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The descriptor half of an atomic replacement: the temporary file beside
// the target, written and synced before it is renamed over it (Renameat,
// RenameNoReplace). What is checked before the rename (the content hash under
// the lock) is the caller's.

// Owner is what a replacement keeps of the file it replaces: the permission
// bits (never setuid, setgid or sticky) and the owner.
type Owner struct {
	Mode     uint32
	UID, GID int
}

// CreateTemp makes an empty temporary file (TempName) in the directory dirfd
// with O_EXCL, and returns its name and descriptor. keep is the target's
// Owner when it exists: the file gets its permission bits and, where the
// process may set it, its owner. A new file gets mode 0666 less the umask.
func CreateTemp(dirfd int, keep *Owner) (string, int, error) {
	perm := uint32(0o666)
	if keep != nil {
		perm = 0o600 // widened to the old bits below, whatever the umask
	}
	for range 10 {
		name := TempName()
		var fd int
		err := RetryEINTR(func() (err error) {
			fd, err = unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
			return err
		})
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", -1, err
		}
		if keep != nil {
			if keep.UID != os.Geteuid() || keep.GID != os.Getegid() {
				unix.Fchown(fd, keep.UID, keep.GID) // best effort: only root may give a file away
			}
			if err := unix.Fchmod(fd, keep.Mode); err != nil {
				unix.Close(fd)
				unix.Unlinkat(dirfd, name, 0)
				return "", -1, err
			}
		}
		return name, fd, nil
	}
	return "", -1, unix.EEXIST
}

// FillTemp writes data to the temporary file fd and makes it durable, so the
// rename that follows can only ever publish complete content.
func FillTemp(fd int, data []byte) error {
	for len(data) > 0 {
		if err := Fault(HookWrite); err != nil {
			return err
		}
		chunk := data[:min(len(data), 1<<20)]
		n, err := unix.Write(fd, chunk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return RetryEINTR(func() error { return unix.Fsync(fd) })
}
