//go:build unix

package sandbox

import (
	"errors"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox/internal/hook"
	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

// Replace replaces the content of the regular file rel with data,
// atomically (see the top of replace.go), once the file there is what x
// expects.
//
// A file the process may not open for writing (a read-only file, for any
// user but root) is refused with the error such an open gives.
//
// The replacement keeps the old file's permission bits (never setuid,
// setgid or sticky) and, where the process may, its owner. A new file gets
// mode 0666 less the umask. The new content has a new inode: other hard
// links to the old file keep the old content.
//
// Errors: those of reaching and looking at the file are *os.PathError
// wrapping an errno (as OpenFile's are, a ParentError inside when the
// failure was on the way to its directory), ENOENT for a missing file
// without x.Create; Check's are its own; a failure to write or rename is a
// WriteError.
func (d *Dir) Replace(rel string, data []byte, x Expect) error {
	c, name, err := d.walkParent("open", rel)
	if err != nil {
		return err
	}
	defer c.Close()
	lk, err := lockFile(&c, name)
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: ParentError{Err: err}}
	}
	defer lk.unlock()
	lk.sweepTemps()

	dirfd := c.at()
	var cur current
	lookFirst := !x.Absent || !x.Create
	if lookFirst {
		if cur, err = x.look(dirfd, name, rel); err != nil {
			return err
		}
	}
	if !cur.exists && !x.Create {
		return &os.PathError{Op: "open", Path: rel, Err: unix.ENOENT}
	}

	tmp, fd, err := createTemp(dirfd, cur)
	if err != nil {
		return &os.PathError{Op: "open", Path: rel, Err: err}
	}
	err = fillTemp(fd, data)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = hook.Fault(hook.BeforeRename)
	}
	if err == nil {
		if cur.exists || x.Check == nil {
			err = renameat(dirfd, tmp, name)
		} else {
			// Expected absent: a file that another process makes
			// meanwhile is not overwritten.
			err = renameNoReplace(dirfd, tmp, name)
		}
	}
	if err == nil {
		return nil
	}
	unix.Unlinkat(dirfd, tmp, 0)
	if errors.Is(err, unix.EEXIST) {
		return x.appeared(dirfd, name, rel, lookFirst)
	}
	return WriteError{&os.PathError{Op: "write", Path: rel, Err: err}}
}

// current is what Replace found at the target, under the lock, and what the
// replacement keeps of it: the permission bits (never setuid, setgid or
// sticky) and the owner.
type current struct {
	exists   bool
	mode     uint32
	uid, gid int
}

// look looks at the target under the lock: its type, whether the process
// may write it, and, when x has a Check, its content, which Check is given.
func (x *Expect) look(dirfd int, name, rel string) (current, error) {
	cur, r, err := lookAt(dirfd, name, rel, x.Check != nil, x.Soft)
	if err != nil {
		return current{}, err
	}
	if r != nil {
		defer r.Close()
		if err := x.Check(r, false); err != nil {
			return current{}, err
		}
	}
	return cur, nil
}

// appeared is Replace's answer when a file appeared where none was: Check's
// on what is there now, or, when Replace did not look before (lookFirst
// false), the error of a look that fails.
func (x *Expect) appeared(dirfd int, name, rel string, lookFirst bool) error {
	_, r, err := lookAt(dirfd, name, rel, true, false)
	if err != nil && !lookFirst {
		return err // as the first look would have
	}
	var in io.Reader
	if r != nil {
		defer r.Close()
		in = r
	}
	if err := x.Check(in, true); err != nil {
		return err
	}
	return WriteError{&os.PathError{Op: "write", Path: rel, Err: unix.EEXIST}}
}

// lookAt stats name in dirfd, refuses what is not a regular file the process
// may write, and, with read, opens it for reading unless it is gone (soft: or
// unreadable).
func lookAt(dirfd int, name, rel string, read, soft bool) (current, *FileReader, error) {
	st, err := lstatAt(dirfd, name)
	if err == nil {
		err = notRegular(&st)
	}
	if err == nil {
		err = mayWrite(dirfd, name, &st)
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return current{}, nil, nil
	case err != nil:
		return current{}, nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	cur := current{exists: true, mode: uint32(st.Mode) & 0o777, uid: int(st.Uid), gid: int(st.Gid)}
	if !read {
		return cur, nil, nil
	}
	fd, size, err := openChecked(dirfd, name, rel, os.O_RDONLY, 0)
	switch {
	case err == nil:
		return cur, walk.NewStream(fd, rel, size), nil
	case soft && errors.Is(err, unix.EACCES):
		return cur, nil, nil // unreadable: the agent never read it either
	case errors.Is(err, unix.ENOENT):
		return current{}, nil, nil // gone since the stat
	}
	return current{}, nil, err
}

// mayWrite refuses, with the error a plain open for writing would give, a
// file (st, name in dirfd) the process may not open for writing. The rename
// that replaces it asks only the directory's permission, so a file the user
// made read-only would be replaced where that open is refused. The file's
// permission is asked as the open asks it, with the effective ids (root may
// still write it, as POSIX says), unless the file's owner bits grant it to
// its owner, the process: the common case, spared the system call.
func mayWrite(dirfd int, name string, st *unix.Stat_t) error {
	if st.Mode&unix.S_IWUSR != 0 && int(st.Uid) == unix.Geteuid() {
		return nil
	}
	err := unix.Faccessat(dirfd, name, unix.W_OK, unix.AT_EACCESS)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return err
	}
	return nil // other answers (an old kernel, a race) are left to the rename
}

// fileLock is a held lockFile.
type fileLock struct {
	mu    *keyedMutex
	dirfd int    // the directory, open for the flock; -1 when it could not be
	dirID string // the directory's identity, for sweepTemps
}

// lockFile takes the lock of the file name in the directory the cursor is
// at: this process's lock of that file, then an exclusive flock of the
// directory, which every agentspec process writing there takes. The flock is
// left out (the process's lock still holds) where the directory cannot be
// opened for it or the filesystem has no flock.
func lockFile(c *Cursor, name string) (*fileLock, error) {
	dirID, err := c.identity()
	if err != nil {
		return nil, err
	}
	id := strconv.FormatUint(dirID.Dev, 16) + ":" + strconv.FormatUint(dirID.Ino, 16)
	lk := &fileLock{mu: fileLocks.lock(id + "/" + name), dirfd: -1, dirID: id}
	if fd, err := openListing(c.at()); err == nil {
		if RetryEINTR(func() error { return unix.Flock(fd, unix.LOCK_EX) }) == nil {
			lk.dirfd = fd
		} else {
			unix.Close(fd)
		}
	}
	return lk, nil
}

// unlock releases the flock, then the process's lock.
func (lk *fileLock) unlock() {
	if lk.dirfd >= 0 {
		unix.Close(lk.dirfd) // releases the flock
	}
	lk.mu.Unlock()
}

// sweepTemps removes the temporary files that writers killed mid-write left
// in the locked directory, once per directory and process. Under the
// directory's flock no other agentspec writer is between creating and
// renaming one, so every temporary file there is stray.
func (lk *fileLock) sweepTemps() {
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

// createTemp makes an empty temporary file (tempName) in the directory dirfd
// with O_EXCL, and returns its name and descriptor. When the target exists
// (keep), the file gets its permission bits and, where the process may set
// it, its owner. A new file gets mode 0666 less the umask.
func createTemp(dirfd int, keep current) (string, int, error) {
	perm := uint32(0o666)
	if keep.exists {
		perm = 0o600 // widened to the old bits below, whatever the umask
	}
	for range 10 {
		name := tempName()
		fd, err := openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", -1, err
		}
		if keep.exists {
			if keep.uid != os.Geteuid() || keep.gid != os.Getegid() {
				unix.Fchown(fd, keep.uid, keep.gid) // best effort: only root may give a file away
			}
			if err := unix.Fchmod(fd, keep.mode); err != nil {
				unix.Close(fd)
				unix.Unlinkat(dirfd, name, 0)
				return "", -1, err
			}
		}
		return name, fd, nil
	}
	return "", -1, unix.EEXIST
}

// fillTemp writes data to the temporary file fd and makes it durable, so the
// rename that follows can only ever publish complete content.
func fillTemp(fd int, data []byte) error {
	for len(data) > 0 {
		if err := hook.Fault(hook.Write); err != nil {
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

// linkNoReplace publishes from as to without replacing an existing to: a
// hard link, which fails with EEXIST, then the removal of from. On a
// filesystem without hard links it falls back to a rename, made only when an
// lstat finds no to just before it.
func linkNoReplace(dirfd int, from, to string) error {
	err := RetryEINTR(func() error { return unix.Linkat(dirfd, from, dirfd, to, 0) })
	switch err {
	case nil:
		return RetryEINTR(func() error { return unix.Unlinkat(dirfd, from, 0) })
	case unix.EPERM, unix.ENOTSUP, unix.EMLINK:
		switch _, err := lstatAt(dirfd, to); {
		case err == nil:
			return unix.EEXIST
		case err != unix.ENOENT:
			return err
		}
		return renameat(dirfd, from, to)
	}
	return err
}

// renameat renames from over to in the directory dirfd.
func renameat(dirfd int, from, to string) error {
	return RetryEINTR(func() error { return unix.Renameat(dirfd, from, dirfd, to) })
}
