//go:build unix

package sandbox

import (
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

// Dir is the root directory, held open: every walk starts from its
// descriptor.
type Dir struct {
	f  *os.File // keeps fd open; nil when the Dir owns fd itself (OpenDir, OpenReal)
	fd int

	idOnce sync.Once // id and idErr come from one fstat: see identity
	id     dirIdentity
	idErr  error

	lazy lazyRoot // see root.go

	// walks guards fd for the walks that start from it (walkRoot), which
	// Close waits for: a walk started as the Dir closes must not open a
	// descriptor number the process has since given to another file.
	walks  sync.RWMutex
	closed bool
}

// dirIdentity is a directory's device and inode number.
type dirIdentity struct{ Dev, Ino uint64 }

// identity returns the root's device and inode, from one fstat for the
// Dir's life: the directory a descriptor holds never changes.
func (d *Dir) identity() (dirIdentity, error) {
	d.idOnce.Do(func() { d.id, d.idErr = fstatIdentity(d.fd) })
	return d.id, d.idErr
}

func fstatIdentity(fd int) (dirIdentity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return dirIdentity{}, err
	}
	return dirIdentity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}

// openOSRoot holds the directory of root, which OpenRoot gives the Dir.
func openOSRoot(root *os.Root) (*Dir, error) {
	f, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	return &Dir{f: f, fd: int(f.Fd())}, nil
}

// OpenDir holds the directory at path, which the Dir owns. Symlinks in path
// are followed, as os.OpenRoot follows them; nothing below it ever is.
func OpenDir(path string) (*Dir, error) {
	// O_DIRECTORY: a file or FIFO at path fails instead of being opened.
	// A bare descriptor, not an os.File: the Dir only ever passes it to *at
	// calls, and os.OpenFile would first try (five system calls) to put it
	// in the runtime's poller, which refuses directories.
	fd, err := openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	d := &Dir{fd: fd}
	d.lazy.open = func() (*os.Root, error) { return d.osRoot(path) }
	return d, nil
}

// Close releases the root's descriptor and its os.Root.
func (d *Dir) Close() {
	d.walks.Lock()
	defer d.walks.Unlock()
	if d.closed {
		return // the descriptor's number may be another file's by now
	}
	d.closed = true
	d.lazy.close()
	if d.f != nil {
		d.f.Close()
		return
	}
	unix.Close(d.fd)
}

// walkRoot lends a walk (package walk) the root's descriptor until done.
func (d *Dir) walkRoot() (fd int, done func(), err error) {
	d.walks.RLock()
	if d.closed {
		d.walks.RUnlock()
		return -1, nil, os.ErrClosed
	}
	return d.fd, d.walks.RUnlock, nil
}

// walkDirFlags opens a directory only to look up names below it.
const walkDirFlags = oPath | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// Cursor is a position in the tree: a stack of directory descriptors, one per
// component below the root. The zero Cursor is not usable; get one from
// Dir.Cursor or Dir.Walk, and Close it.
type Cursor struct {
	dir  *Dir
	root int
	fds  []int
}

// Cursor returns a cursor at the root.
func (d *Dir) Cursor() Cursor { return Cursor{dir: d, root: d.fd} }

// identity returns the device and inode of the directory the cursor is at;
// the root's is stated once (Dir.dirIdentity).
func (c *Cursor) identity() (dirIdentity, error) {
	if len(c.fds) == 0 && c.dir != nil {
		return c.dir.identity()
	}
	return fstatIdentity(c.at())
}

// at is the descriptor of the directory the cursor is at, for the *at system
// calls; it stays valid until the cursor moves or closes.
func (c *Cursor) at() int {
	if len(c.fds) == 0 {
		return c.root
	}
	return c.fds[len(c.fds)-1]
}

// Lstat tells the kind of name, below the cursor, without following a
// symlink.
func (c *Cursor) Lstat(name string) (Kind, error) {
	if leavesDir(name) {
		return KindOther, unix.EXDEV
	}
	st, err := lstatAt(c.at(), name)
	if err != nil {
		return KindOther, err
	}
	return kindOf(fileMode(&st)), nil
}

// Readlink returns the text of the symlink name below the cursor.
func (c *Cursor) Readlink(name string) (string, error) {
	if leavesDir(name) {
		return "", unix.EXDEV
	}
	return readlinkat(c.at(), name)
}

// Down enters the directory name. A symlink in its place fails with ELOOP,
// anything else that is not a directory with ENOTDIR.
func (c *Cursor) Down(name string) error {
	if leavesDir(name) {
		return unix.EXDEV
	}
	fd, err := openat(c.at(), name, walkDirFlags, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
			if k, lerr := c.Lstat(name); lerr == nil && k == KindSymlink {
				return unix.ELOOP
			}
			if !errors.Is(err, unix.ENOTDIR) {
				err = unix.ENOTDIR
			}
		}
		return err
	}
	c.fds = append(c.fds, fd)
	return nil
}

// Up leaves the directory the cursor is at for its parent; at the root it
// does nothing.
func (c *Cursor) Up() {
	if n := len(c.fds); n > 0 {
		unix.Close(c.fds[n-1])
		c.fds = c.fds[:n-1]
	}
}

// Reset moves the cursor back to the root.
func (c *Cursor) Reset() {
	for len(c.fds) > 0 {
		c.Up()
	}
}

// Close releases the cursor's descriptors (never the root's).
func (c *Cursor) Close() { c.Reset() }

// walkParent returns a cursor at the directory holding rel, and rel's name.
// A failure is an *os.PathError for op whose error is a ParentError.
func (d *Dir) walkParent(op, rel string) (Cursor, string, error) {
	dir, name := Split(rel)
	if leavesDir(name) {
		return Cursor{}, "", &os.PathError{Op: op, Path: rel, Err: unix.EXDEV}
	}
	c, err := d.Walk(dir)
	if err != nil {
		return Cursor{}, "", &os.PathError{Op: op, Path: rel, Err: ParentError{Err: err}}
	}
	return c, name, nil
}

// Lstat describes rel without following a final symlink. rel "." is the root.
func (d *Dir) Lstat(rel string) (os.FileInfo, error) {
	c, name, err := d.walkParent("lstat", rel)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	st, err := lstatAt(c.at(), name)
	if err != nil {
		return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return statInfo(name, &st), nil
}

// Readlink returns the text of the symlink rel.
func (d *Dir) Readlink(rel string) (string, error) {
	c, name, err := d.walkParent("readlink", rel)
	if err != nil {
		return "", err
	}
	defer c.Close()
	target, err := readlinkat(c.at(), name)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: rel, Err: err}
	}
	return target, nil
}

// OpenFile opens the regular file rel with flag (os.O_* values) and, when
// creating, perm. It never follows a symlink and never blocks on a FIFO: the
// final component is opened with O_NOFOLLOW|O_NONBLOCK, and its type is
// checked on the descriptor before anything is read, written or truncated.
// Errors are *os.PathError wrapping an errno: ELOOP when a symlink took the
// place of a component, EISDIR for a directory, ErrNotRegular for any other
// file that is not regular.
func (d *Dir) OpenFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	c, name, err := d.walkParent("open", rel)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	fd, _, err := c.openRegular(name, rel, flag, perm, false)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}

func (d *Dir) openReader(rel string, found bool) (*FileReader, error) {
	c, name, err := d.walkParent("open", rel)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.openReader(name, rel, found)
}

// openReader opens the regular file name below the cursor for
// Cursor.OpenReader and Dir.OpenReader; rel names it in errors.
func (c *Cursor) openReader(name, rel string, found bool) (*FileReader, error) {
	fd, size, err := c.openRegular(name, rel, os.O_RDONLY, 0, found)
	if err != nil {
		return nil, err
	}
	return walk.NewStream(fd, rel, size), nil
}

// openRegular opens the regular file name below the cursor as OpenFile
// describes, and returns its descriptor, still O_NONBLOCK, and its size; rel
// names it in errors. found says the caller has just seen a regular file
// there, which spares the lstat before the open.
func (c *Cursor) openRegular(name, rel string, flag int, perm os.FileMode, found bool) (fd int, size int64, err error) {
	if leavesDir(name) {
		return -1, 0, &os.PathError{Op: "open", Path: rel, Err: unix.EXDEV}
	}
	// Opening a device can have side effects, so anything that is not a
	// regular file or directory is refused from its metadata; the type is
	// checked again on the descriptor.
	if !found {
		if st, err := lstatAt(c.at(), name); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := notRegular(&st); err != nil {
				return -1, 0, &os.PathError{Op: "open", Path: rel, Err: err}
			}
		}
	}
	return openChecked(c.at(), name, rel, flag, perm)
}

// openChecked opens name in the directory dirfd once the kind of name is
// known not to be a device: O_NOFOLLOW|O_NONBLOCK, and the type checked on
// the descriptor.
func openChecked(dirfd int, name, rel string, flag int, perm os.FileMode) (fd int, size int64, err error) {
	fd, err = openat(dirfd, name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		switch {
		case errors.Is(err, unix.EMLINK):
			err = unix.ELOOP // FreeBSD's "the final component is a symlink"
		case errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP):
			err = ErrNotRegular // a socket, or a FIFO without a reader
		}
		return -1, 0, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, &os.PathError{Op: "fstat", Path: rel, Err: err}
	}
	if err := notRegular(&st); err != nil {
		unix.Close(fd)
		return -1, 0, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, st.Size, nil
}

// notRegular is nil for the stat of a regular file, and otherwise what an
// open that wants one reports: ELOOP for a symlink, EISDIR for a directory,
// ErrNotRegular for a FIFO, socket or device.
func notRegular(st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		return unix.ELOOP
	case unix.S_IFDIR:
		return unix.EISDIR
	}
	return ErrNotRegular
}

// MkdirAll creates rel and its missing parents with perm (less the umask),
// never following a symlink. created says whether this call made any
// directory.
func (d *Dir) MkdirAll(rel string, perm os.FileMode) (created bool, err error) {
	c := d.Cursor()
	defer c.Close()
	if rel == "." {
		return false, nil
	}
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		err := c.Down(name)
		if errors.Is(err, unix.ENOENT) {
			err = RetryEINTR(func() error { return unix.Mkdirat(c.at(), name, uint32(perm.Perm())) })
			if err == nil {
				created = true
			}
			if err == nil || errors.Is(err, unix.EEXIST) {
				err = c.Down(name)
			}
		}
		if err != nil {
			return created, &os.PathError{Op: "mkdir", Path: strings.Join(parts[:i+1], "/"), Err: err}
		}
	}
	return created, nil
}

// Rename renames from to to, replacing what is there as rename(2) does,
// never through a symlink on the way to either.
func (d *Dir) Rename(from, to string) error {
	fc, fname, err := d.walkParent("rename", from)
	if err != nil {
		return err
	}
	defer fc.Close()
	tc, tname, err := d.walkParent("rename", to)
	if err != nil {
		return err
	}
	defer tc.Close()
	err = RetryEINTR(func() error { return unix.Renameat(fc.at(), fname, tc.at(), tname) })
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// Remove removes the file or empty directory rel, as os.Remove does, never
// through a symlink on the way to it.
func (d *Dir) Remove(rel string) error {
	c, name, err := d.walkParent("remove", rel)
	if err != nil {
		return err
	}
	defer c.Close()
	err = RetryEINTR(func() error { return unix.Unlinkat(c.at(), name, 0) })
	if err == nil {
		return nil
	}
	err1 := RetryEINTR(func() error { return unix.Unlinkat(c.at(), name, unix.AT_REMOVEDIR) })
	if err1 == nil {
		return nil
	}
	if err1 != unix.ENOTDIR {
		err = err1
	}
	return &os.PathError{Op: "remove", Path: rel, Err: err}
}

// readlinkat returns the text of the symlink name in the directory dirfd.
func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		var n int
		err := RetryEINTR(func() (err error) {
			n, err = unix.Readlinkat(dirfd, name, buf)
			return err
		})
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// openat opens name in the directory dirfd (unix.AT_FDCWD: a path).
func openat(dirfd int, name string, flags int, perm uint32) (fd int, err error) {
	err = RetryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, flags, perm)
		return err
	})
	return fd, err
}

// openListing opens the directory dirfd again for reading its entries: dirfd
// may be one (O_PATH) that cannot list.
func openListing(dirfd int) (int, error) {
	return openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// lstatAt describes name in the directory dirfd without following a symlink.
func lstatAt(dirfd int, name string) (st unix.Stat_t, err error) {
	err = RetryEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return st, err
}

// RetryEINTR calls f again for as long as it fails with EINTR.
func RetryEINTR(f func() error) error {
	for {
		err := f()
		if err != unix.EINTR {
			return err
		}
	}
}

// fileStat is an os.FileInfo built from a stat(2) result.
type fileStat struct {
	name  string
	size  int64
	mode  os.FileMode
	mtime time.Time
	sys   unix.Stat_t
}

func statInfo(name string, st *unix.Stat_t) *fileStat {
	sec, nsec := st.Mtim.Unix()
	return &fileStat{name: name, size: st.Size, mode: fileMode(st), mtime: time.Unix(sec, nsec), sys: *st}
}

// fileMode is the os.FileMode of a stat(2) result; a type it has no bit for
// is ModeIrregular, never a regular file.
func fileMode(st *unix.Stat_t) os.FileMode {
	mode := os.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= os.ModeDir
	case unix.S_IFLNK:
		mode |= os.ModeSymlink
	case unix.S_IFIFO:
		mode |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= os.ModeSocket
	case unix.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		mode |= os.ModeDevice
	case unix.S_IFREG:
	default: // a type os.FileMode has no bit for (a whiteout, a door)
		mode |= os.ModeIrregular
	}
	if st.Mode&unix.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

func (s *fileStat) Name() string       { return s.name }
func (s *fileStat) Size() int64        { return s.size }
func (s *fileStat) Mode() os.FileMode  { return s.mode }
func (s *fileStat) ModTime() time.Time { return s.mtime }
func (s *fileStat) IsDir() bool        { return s.mode.IsDir() }
func (s *fileStat) Sys() any           { return &s.sys }
