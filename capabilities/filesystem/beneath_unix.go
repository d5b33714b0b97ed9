//go:build unix

package filesystem

import (
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Descriptor walks beneath the root. Every lookup here is relative to a
// descriptor of a directory reached from the root without following a symlink;
// see path.go for why.

// rootDir is the descriptor walks start from.
type rootDir struct {
	f  *os.File // keeps fd open
	fd int
}

func openRootDir(root *os.Root) (*rootDir, error) {
	f, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	return &rootDir{f: f, fd: int(f.Fd())}, nil
}

func (d *rootDir) close() { d.f.Close() }

// walkDirFlags opens a directory only to look up names below it.
const walkDirFlags = oPath | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// cursor is a position in the tree: a stack of directory descriptors, one per
// component below the root.
type cursor struct {
	root int
	fds  []int
}

func (d *rootDir) cursor() cursor { return cursor{root: d.fd} }

func (c *cursor) at() int {
	if len(c.fds) == 0 {
		return c.root
	}
	return c.fds[len(c.fds)-1]
}

// stat describes name, below the cursor, without following a symlink.
func (c *cursor) stat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := retryEINTR(func() error { return unix.Fstatat(c.at(), name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return st, err
}

func (c *cursor) lstat(name string) (entryKind, error) {
	st, err := c.stat(name)
	if err != nil {
		return kindOther, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return kindDir, nil
	case unix.S_IFLNK:
		return kindSymlink, nil
	}
	return kindOther, nil
}

func (c *cursor) readlink(name string) (string, error) {
	return readlinkat(c.at(), name)
}

// down enters the directory name. A symlink in its place fails with ELOOP,
// anything else that is not a directory with ENOTDIR.
func (c *cursor) down(name string) error {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(c.at(), name, walkDirFlags, 0)
		return err
	})
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
			if k, lerr := c.lstat(name); lerr == nil && k == kindSymlink {
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

func (c *cursor) up() {
	if n := len(c.fds); n > 0 {
		unix.Close(c.fds[n-1])
		c.fds = c.fds[:n-1]
	}
}

func (c *cursor) reset() {
	for len(c.fds) > 0 {
		c.up()
	}
}

func (c *cursor) close() { c.reset() }

// walk returns a cursor at the directory rel, reached without following a
// symlink: in one openat2 call where the kernel has it, component by
// component otherwise. The error is the errno of the step that failed.
func (fs *FS) walk(rel string) (cursor, error) {
	c := fs.dir.cursor()
	if rel == "." {
		return c, nil
	}
	if fd, ok, err := openDirBeneath(c.root, rel); ok {
		if err != nil {
			return cursor{}, err
		}
		c.fds = append(c.fds, fd)
		return c, nil
	}
	for name := range strings.SplitSeq(rel, "/") {
		if err := c.down(name); err != nil {
			c.close()
			return cursor{}, err
		}
	}
	return c, nil
}

// walkParent returns a cursor at the directory holding rel, and rel's name.
func (fs *FS) walkParent(op, rel string) (cursor, string, error) {
	dir, name := split(rel)
	c, err := fs.walk(dir)
	if err != nil {
		return cursor{}, "", &os.PathError{Op: op, Path: rel, Err: parentError{err}}
	}
	return c, name, nil
}

// lstat describes rel without following a final symlink. rel "." is the root.
func (fs *FS) lstat(rel string) (os.FileInfo, error) {
	c, name, err := fs.walkParent("lstat", rel)
	if err != nil {
		return nil, err
	}
	defer c.close()
	st, err := c.stat(name)
	if err != nil {
		return nil, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return statInfo(name, &st), nil
}

// readlink returns the text of the symlink rel.
func (fs *FS) readlink(rel string) (string, error) {
	c, name, err := fs.walkParent("readlink", rel)
	if err != nil {
		return "", err
	}
	defer c.close()
	target, err := readlinkat(c.at(), name)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: rel, Err: err}
	}
	return target, nil
}

// openFile opens the regular file rel with flag (os.O_* values) and, when
// creating, perm. It never follows a symlink and never blocks on a FIFO: the
// final component is opened with O_NOFOLLOW|O_NONBLOCK, and its type is
// checked on the descriptor before anything is read, written or truncated.
// Errors are *os.PathError wrapping an errno: ELOOP when a symlink took the
// place of a component, EISDIR for a directory, errNotRegular for any other
// file that is not regular.
func (fs *FS) openFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	fd, _, err := fs.openRegular(rel, flag, perm)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// openReader opens the regular file rel for reading, as openFile does, but
// keeps the bare descriptor: see fileReader.
func (fs *FS) openReader(rel string) (*fileReader, error) {
	fd, size, err := fs.openRegular(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return &fileReader{fd: fd, size: size, name: rel}, nil
}

// openRegular is openFile's descriptor, still O_NONBLOCK, and the file's
// size.
func (fs *FS) openRegular(rel string, flag int, perm os.FileMode) (fd int, size int64, err error) {
	c, name, err := fs.walkParent("open", rel)
	if err != nil {
		return -1, 0, err
	}
	defer c.close()
	// Opening a device can have side effects, so anything that is not a
	// regular file or directory is refused from its metadata; the type is
	// checked again on the descriptor.
	if st, err := c.stat(name); err == nil {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG, unix.S_IFDIR:
		case unix.S_IFLNK:
			return -1, 0, &os.PathError{Op: "open", Path: rel, Err: unix.ELOOP}
		default:
			return -1, 0, &os.PathError{Op: "open", Path: rel, Err: errNotRegular}
		}
	}
	err = retryEINTR(func() (err error) {
		fd, err = unix.Openat(c.at(), name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		switch {
		case errors.Is(err, unix.EMLINK):
			err = unix.ELOOP // FreeBSD's "the final component is a symlink"
		case errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP):
			err = errNotRegular // a socket, or a FIFO without a reader
		}
		return -1, 0, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, &os.PathError{Op: "fstat", Path: rel, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return fd, st.Size, nil
	case unix.S_IFDIR:
		err = unix.EISDIR
	default:
		err = errNotRegular
	}
	unix.Close(fd)
	return -1, 0, &os.PathError{Op: "open", Path: rel, Err: err}
}

// fileReader reads a regular file through the bare descriptor openReader
// made: no os.File, so none of the fcntl calls and poller bookkeeping that
// come with one. The descriptor keeps its O_NONBLOCK, which a regular file
// ignores.
type fileReader struct {
	fd   int
	size int64  // as fstat reported it at the open
	name string // rel, for errors
	eof  bool
}

// Read reads as io.Reader does. A regular file returns fewer bytes than
// asked only at its end, so a short read ends the file without the read that
// would return nothing (reads are capped near 2 GiB, hence the second test),
// as internal/walk reads files.
func (r *fileReader) Read(p []byte) (int, error) {
	if r.eof {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(r.fd, p)
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			// A filesystem that honours O_NONBLOCK on a regular file (a
			// FUSE one may): block from now on.
			if err := unix.SetNonblock(r.fd, false); err != nil {
				return 0, &os.PathError{Op: "fcntl", Path: r.name, Err: err}
			}
			continue
		default:
			return 0, &os.PathError{Op: "read", Path: r.name, Err: err}
		}
		if n == 0 || (n < len(p) && n < 1<<30) {
			r.eof = true
			return n, io.EOF
		}
		return n, nil
	}
}

func (r *fileReader) Close() error { return unix.Close(r.fd) }

// mkdirAll creates rel and its missing parents (mode 0777 less the umask),
// never following a symlink. created says whether this call made any
// directory.
func (fs *FS) mkdirAll(rel string) (created bool, err error) {
	c := fs.dir.cursor()
	defer c.close()
	if rel == "." {
		return false, nil
	}
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		err := c.down(name)
		if errors.Is(err, unix.ENOENT) {
			err = retryEINTR(func() error { return unix.Mkdirat(c.at(), name, 0o777) })
			if err == nil {
				created = true
			}
			if err == nil || errors.Is(err, unix.EEXIST) {
				err = c.down(name)
			}
		}
		if err != nil {
			return created, &os.PathError{Op: "mkdir", Path: strings.Join(parts[:i+1], "/"), Err: err}
		}
	}
	return created, nil
}

func readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		var n int
		err := retryEINTR(func() (err error) {
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

func retryEINTR(f func() error) error {
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
	sec, nsec := st.Mtim.Unix()
	return &fileStat{name: name, size: st.Size, mode: mode, mtime: time.Unix(sec, nsec), sys: *st}
}

func (s *fileStat) Name() string       { return s.name }
func (s *fileStat) Size() int64        { return s.size }
func (s *fileStat) Mode() os.FileMode  { return s.mode }
func (s *fileStat) ModTime() time.Time { return s.mtime }
func (s *fileStat) IsDir() bool        { return s.mode.IsDir() }
func (s *fileStat) Sys() any           { return &s.sys }
