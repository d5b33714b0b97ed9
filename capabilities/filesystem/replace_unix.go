//go:build unix

package filesystem

import (
	"errors"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/sandbox"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// writeThrough replaces the content of the regular file rel with data,
// atomically: the bytes go to a temporary file in the same directory, made
// through the directory's descriptor with O_EXCL, which is fsynced and then
// renamed over rel. A reader sees the old content or the new, never a part;
// a failure at any point (a full disk, a kill) leaves the old content
// byte-identical, and the temporary file is removed (or, after a kill,
// removed by the next write in that directory, see sweepTemps).
//
// Everything between the guard check and the rename happens under the file's
// lock (lockFile): the lock of this process's writers to that file and an
// flock on the directory, which other agentspec processes take too, so no
// check-then-write of one writer interleaves with another's and no edit
// reported as done is lost.
//
// The replacement keeps the old file's permission bits (never setuid,
// setgid or sticky) and, where the process may, its owner. A new file gets
// mode 0666 less the umask. The new content has a new inode: other hard
// links to the old file keep the old content.
//
// When g has a hash, the file's content must still hash to it (a mismatch is
// a *staleError); absentHash refuses a file that appeared where none was.
// create false refuses to create a file that is gone.
func (fs *FS) writeThrough(path, rel string, data []byte, g guard, create bool) error {
	c, name, err := fs.dir.WalkParent("open", rel)
	if err != nil {
		return writeOpenError(path, rel, err, create)
	}
	defer c.Close()
	lk, err := lockFile(c.At(), name)
	if err != nil {
		return writeOpenError(path, rel, &os.PathError{Op: "open", Path: rel, Err: sandbox.ParentError{Err: err}}, create)
	}
	defer lk.unlock()
	sweepTemps(lk)

	cur, err := currentFile(c.At(), name, rel, g)
	if err != nil {
		return writeOpenError(path, rel, err, create)
	}
	switch {
	case !cur.exists && !create:
		return writeOpenError(path, rel, &os.PathError{Op: "open", Path: rel, Err: unix.ENOENT}, false)
	case cur.exists && g.hash == absentHash:
		return &staleError{want: absentHash, got: cur.hash}
	case cur.exists && cur.hash != "" && cur.hash != g.hash:
		return &staleError{want: g.hash, got: cur.hash}
	}

	tmp, fd, err := createTemp(c.At(), cur)
	if err != nil {
		return writeOpenError(path, rel, &os.PathError{Op: "open", Path: rel, Err: err}, create)
	}
	err = fillTemp(fd, data)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = testHook(hookBeforeRename)
	}
	if err == nil {
		if cur.exists || g.hash == "" {
			err = renameat(c.At(), tmp, name)
		} else {
			// Guarded and absent: a file that another process makes
			// meanwhile is not overwritten.
			err = sandbox.RenameNoReplace(c.At(), tmp, name)
		}
	}
	if err != nil {
		unix.Unlinkat(c.At(), tmp, 0)
		if errors.Is(err, unix.EEXIST) {
			now, _ := currentFile(c.At(), name, rel, guard{hash: absentHash})
			return &staleError{want: g.hash, got: now.hash}
		}
		return osError(&os.PathError{Op: "write", Path: rel, Err: err})
	}
	return nil
}

// current is what writeThrough found at the target, under the lock.
type current struct {
	exists   bool
	hash     string // the content's hash, when the guard needed it
	mode     uint32 // permission bits to keep
	uid, gid int
}

// currentFile looks at the target under the lock: its type, and its content
// hash when g has one to compare.
func currentFile(dirfd int, name, rel string, g guard) (current, error) {
	var st unix.Stat_t
	err := sandbox.RetryEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	switch {
	case errors.Is(err, unix.ENOENT):
		return current{}, nil
	case err != nil:
		return current{}, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return current{}, &os.PathError{Op: "open", Path: rel, Err: unix.ELOOP}
	case unix.S_IFDIR:
		return current{}, &os.PathError{Op: "open", Path: rel, Err: unix.EISDIR}
	default:
		return current{}, &os.PathError{Op: "open", Path: rel, Err: sandbox.ErrNotRegular}
	}
	cur := current{exists: true, mode: uint32(st.Mode) & 0o777, uid: int(st.Uid), gid: int(st.Gid)}
	if g.hash == "" {
		return cur, nil
	}
	var fd int
	err = sandbox.RetryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	switch {
	case err == nil:
	case g.soft && errors.Is(err, unix.EACCES):
		return cur, nil // unreadable: the agent never read it either
	case errors.Is(err, unix.ENOENT):
		return current{}, nil // gone since the stat
	default:
		if errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) {
			err = sandbox.ErrNotRegular
		}
		return current{}, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	r := sandbox.NewFileReader(fd, rel)
	defer r.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return current{}, &os.PathError{Op: "fstat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return current{}, &os.PathError{Op: "open", Path: rel, Err: sandbox.ErrNotRegular}
	}
	cur.hash, err = hashRest(nil, r)
	if err != nil {
		return current{}, err
	}
	return cur, nil
}

// createTemp makes an empty temporary file beside the target, with the
// target's permission bits (and owner, where the process may set it) when it
// exists.
func createTemp(dirfd int, cur current) (string, int, error) {
	perm := uint32(0o666)
	if cur.exists {
		perm = 0o600 // widened to the old bits below, whatever the umask
	}
	for range 10 {
		name := tempName()
		var fd int
		err := sandbox.RetryEINTR(func() (err error) {
			fd, err = unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
			return err
		})
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", -1, err
		}
		if cur.exists {
			if cur.uid != os.Geteuid() || cur.gid != os.Getegid() {
				unix.Fchown(fd, cur.uid, cur.gid) // best effort: only root may give a file away
			}
			if err := unix.Fchmod(fd, cur.mode); err != nil {
				unix.Close(fd)
				unix.Unlinkat(dirfd, name, 0)
				return "", -1, err
			}
		}
		return name, fd, nil
	}
	return "", -1, unix.EEXIST
}

// fillTemp writes data to the temporary file and makes it durable, so the
// rename that follows can only ever publish complete content.
func fillTemp(fd int, data []byte) error {
	for len(data) > 0 {
		if err := testHook(hookWrite); err != nil {
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
	return sandbox.RetryEINTR(func() error { return unix.Fsync(fd) })
}

func renameat(dirfd int, from, to string) error {
	return sandbox.RetryEINTR(func() error { return unix.Renameat(dirfd, from, dirfd, to) })
}

// fileLock is a held lockFile.
type fileLock struct {
	mu    *keyedMutex
	dirfd int    // the directory, open for the flock; -1 when it could not be
	dirID string // the directory's identity, for sweepTemps
}

// lockFile takes the lock of the file name in the directory dirfd: this
// process's lock of that file, then an exclusive flock of the directory,
// which every agentspec process writing there takes. The flock is left out
// (the process's lock still holds) where the directory cannot be opened for
// it or the filesystem has no flock.
func lockFile(dirfd int, name string) (*fileLock, error) {
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return nil, err
	}
	id := strconv.FormatUint(uint64(st.Dev), 16) + ":" + strconv.FormatUint(uint64(st.Ino), 16)
	lk := &fileLock{mu: fileLocks.lock(id + "/" + name), dirfd: -1, dirID: id}
	var fd int
	err := sandbox.RetryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err == nil {
		if sandbox.RetryEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX) }) == nil {
			lk.dirfd = fd
		} else {
			unix.Close(fd)
		}
	}
	return lk, nil
}

func (lk *fileLock) unlock() {
	if lk.dirfd >= 0 {
		unix.Close(lk.dirfd) // releases the flock
	}
	lk.mu.unlock()
}

// sweepTemps removes the temporary files that writers killed mid-write left
// in the locked directory, once per directory and process. Under the
// directory's flock no other agentspec writer is between creating and
// renaming one, so every temporary file there is stray.
func sweepTemps(lk *fileLock) {
	if lk.dirfd < 0 || !sweptDirs.first(lk.dirID) {
		return
	}
	fd, err := unix.Dup(lk.dirfd)
	if err != nil {
		return
	}
	d := os.NewFile(uintptr(fd), "dir")
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		if isTempName(n) {
			unix.Unlinkat(lk.dirfd, n, 0)
		}
	}
}
