//go:build unix

package sandbox

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// FileLock is a held LockFile.
type FileLock struct {
	mu    *KeyedMutex
	dirfd int    // the directory, open for the flock; -1 when it could not be
	dirID string // the directory's identity, for SweepTemps
}

// LockFile takes the lock of the file name in the directory the cursor is
// at: this process's lock of that file, then an exclusive flock of the
// directory, which every agentspec process writing there takes. The flock is
// left out (the process's lock still holds) where the directory cannot be
// opened for it or the filesystem has no flock.
func LockFile(c *Cursor, name string) (*FileLock, error) {
	dirID, err := c.Identity()
	if err != nil {
		return nil, err
	}
	dirfd := c.At()
	id := strconv.FormatUint(dirID.Dev, 16) + ":" + strconv.FormatUint(dirID.Ino, 16)
	lk := &FileLock{mu: fileLocks.lock(id + "/" + name), dirfd: -1, dirID: id}
	var fd int
	err = RetryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err == nil {
		if RetryEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX) }) == nil {
			lk.dirfd = fd
		} else {
			unix.Close(fd)
		}
	}
	return lk, nil
}

// Unlock releases the flock, then the process's lock.
func (lk *FileLock) Unlock() {
	if lk.dirfd >= 0 {
		unix.Close(lk.dirfd) // releases the flock
	}
	lk.mu.Unlock()
}

// SweepTemps removes the temporary files that writers killed mid-write left
// in the locked directory, once per directory and process. Under the
// directory's flock no other agentspec writer is between creating and
// renaming one, so every temporary file there is stray.
func SweepTemps(lk *FileLock) {
	if lk.dirfd < 0 || !sweptDirs.first(lk.dirID) {
		return
	}
	// The names are read through the lock's own descriptor, which nothing
	// else reads: an os.File on a duplicate of it would cost a dup, the
	// poller's fcntl calls and a close on every first write in a directory,
	// which in a batch is every job's. The names are all read before any is
	// unlinked, so removing them does not disturb the reading.
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.ReadDirent(lk.dirfd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	for _, n := range names {
		if IsTempName(n) {
			unix.Unlinkat(lk.dirfd, n, 0)
		}
	}
}
