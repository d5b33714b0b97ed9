//go:build !unix

package filesystem

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// Without openat, walks go through the os.Root: it never leaves the root,
// though it follows in-root symlinks that appear after a check, and it cannot
// open a FIFO without blocking or check a file's type before opening it.

type rootDir struct{ root *os.Root }

func openRootDir(root *os.Root) (*rootDir, error) { return &rootDir{root: root}, nil }

func (d *rootDir) close() {}

type cursor struct {
	root  *os.Root
	parts []string
}

func (d *rootDir) cursor() cursor { return cursor{root: d.root} }

func (c *cursor) path(name string) string {
	return strings.Join(append(c.parts[:len(c.parts):len(c.parts)], name), "/")
}

func (c *cursor) lstat(name string) (entryKind, error) {
	st, err := c.root.Lstat(c.path(name))
	if err != nil {
		return kindOther, err
	}
	switch {
	case st.IsDir():
		return kindDir, nil
	case st.Mode()&os.ModeSymlink != 0:
		return kindSymlink, nil
	}
	return kindOther, nil
}

func (c *cursor) readlink(name string) (string, error) { return c.root.Readlink(c.path(name)) }

func (c *cursor) down(name string) error {
	k, err := c.lstat(name)
	switch {
	case err != nil:
		return err
	case k == kindSymlink:
		return syscall.ELOOP
	case k != kindDir:
		return syscall.ENOTDIR
	}
	c.parts = append(c.parts, name)
	return nil
}

func (c *cursor) up() {
	if len(c.parts) > 0 {
		c.parts = c.parts[:len(c.parts)-1]
	}
}

func (c *cursor) reset() { c.parts = c.parts[:0] }
func (c *cursor) close() {}

func (fs *FS) lstat(rel string) (os.FileInfo, error) { return fs.root.Lstat(rel) }

func (fs *FS) readlink(rel string) (string, error) { return fs.root.Readlink(rel) }

func (fs *FS) openFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	if dir, _ := split(rel); dir != "." {
		if st, err := fs.root.Stat(dir); err != nil || !st.IsDir() {
			if err == nil {
				err = syscall.ENOTDIR
			}
			return nil, &os.PathError{Op: "open", Path: rel, Err: parentError{err}}
		}
	}
	if st, err := fs.root.Lstat(rel); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, &os.PathError{Op: "open", Path: rel, Err: syscall.EISDIR}
		}
		return nil, &os.PathError{Op: "open", Path: rel, Err: errNotRegular}
	}
	f, err := fs.root.OpenFile(rel, flag, perm)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: rel, Err: errNotRegular}
	}
	return f, nil
}

// fileReader is a regular file open for reading.
type fileReader struct {
	*os.File
	size int64 // as stat reported it at the open
}

func (fs *FS) openReader(rel string) (*fileReader, error) {
	f, err := fs.openFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileReader{File: f, size: st.Size()}, nil
}

func (fs *FS) mkdirAll(rel string) (bool, error) {
	if st, err := fs.root.Stat(rel); err == nil && st.IsDir() {
		return false, nil
	}
	err := fs.root.MkdirAll(rel, 0o777)
	if errors.Is(err, os.ErrExist) {
		err = &os.PathError{Op: "mkdir", Path: rel, Err: syscall.ENOTDIR}
	}
	return err == nil, err
}
