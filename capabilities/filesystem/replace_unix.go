//go:build unix

package filesystem

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// writeThrough replaces the content of the regular file rel with data,
// atomically: the bytes go to a temporary file in the same directory, made
// through the directory's descriptor with O_EXCL, which is fsynced and then
// renamed over rel. A reader sees the old content or the new, never a part;
// a failure at any point (a full disk, a kill) leaves the old content
// byte-identical, and the temporary file is removed (or, after a kill,
// removed by the next write in that directory, see sandbox.SweepTemps).
//
// Everything between the guard check and the rename happens under the file's
// lock (sandbox.LockFile): the lock of this process's writers to that file and an
// flock on the directory, which other agentspec processes take too, so no
// check-then-write of one writer interleaves with another's and no edit
// reported as done is lost.
//
// A file the process may not open for writing (a read-only file, for any
// user but root) is refused with the error such an open gives.
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
	lk, err := sandbox.LockFile(&c, name)
	if err != nil {
		return writeOpenError(path, rel, &os.PathError{Op: "open", Path: rel, Err: sandbox.ParentError{Err: err}}, create)
	}
	defer lk.Unlock()
	sandbox.SweepTemps(lk)

	// A target that must be absent is not looked at first: the rename that
	// publishes the new file refuses one that appeared (RenameNoReplace),
	// at the moment that counts, and is the look.
	var cur current
	lookFirst := g.hash != absentHash || !create
	if lookFirst {
		if cur, err = currentFile(c.At(), name, rel, g); err != nil {
			return writeOpenError(path, rel, err, create)
		}
	}
	switch {
	case !cur.exists && !create:
		return writeOpenError(path, rel, &os.PathError{Op: "open", Path: rel, Err: unix.ENOENT}, false)
	case cur.exists && g.hash == absentHash:
		return &staleError{want: absentHash, got: cur.hash}
	case cur.exists && cur.hash != "" && cur.hash != g.hash:
		return &staleError{want: g.hash, got: cur.hash}
	}

	tmp, fd, err := sandbox.CreateTemp(c.At(), cur.keep())
	if err != nil {
		return writeOpenError(path, rel, &os.PathError{Op: "open", Path: rel, Err: err}, create)
	}
	err = sandbox.FillTemp(fd, data)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = sandbox.Fault(sandbox.HookBeforeRename)
	}
	if err == nil {
		if cur.exists || g.hash == "" {
			err = sandbox.Renameat(c.At(), tmp, name)
		} else {
			// Guarded and absent: a file that another process makes
			// meanwhile is not overwritten.
			err = sandbox.RenameNoReplace(c.At(), tmp, name)
		}
	}
	if err != nil {
		unix.Unlinkat(c.At(), tmp, 0)
		if errors.Is(err, unix.EEXIST) {
			now, err := currentFile(c.At(), name, rel, guard{hash: absentHash})
			if err != nil && !lookFirst {
				return writeOpenError(path, rel, err, create) // as the first look would have
			}
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

// keep is what the replacement keeps of the file, nil when there is none.
func (c current) keep() *sandbox.Owner {
	if !c.exists {
		return nil
	}
	return &sandbox.Owner{Mode: c.mode, UID: c.uid, GID: c.gid}
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
	if err := mayWrite(dirfd, name, &st); err != nil {
		return current{}, &os.PathError{Op: "open", Path: rel, Err: err}
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
