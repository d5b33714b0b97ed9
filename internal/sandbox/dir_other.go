//go:build !unix

package sandbox

import (
	"errors"
	"os"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

// Dir is the root directory, reached through its os.Root.
type Dir struct {
	root *os.Root
	lazy lazyRoot // root itself, here
}

// openOSRoot holds the directory of root, which the Dir owns.
func openOSRoot(root *os.Root) (*Dir, error) {
	d := &Dir{root: root}
	d.lazy.root = root
	return d, nil
}

// OpenDir holds the directory at path, through an os.Root the Dir owns.
func OpenDir(path string) (*Dir, error) { return OpenRoot(path) }

// Close closes the Dir's os.Root.
func (d *Dir) Close() { d.lazy.close() }

// Cursor is a position in the tree, as a list of components below the root.
type Cursor struct {
	root  *os.Root
	parts []string
}

// Cursor returns a cursor at the root.
func (d *Dir) Cursor() Cursor { return Cursor{root: d.root} }

func (c *Cursor) path(name string) string {
	return strings.Join(append(c.parts[:len(c.parts):len(c.parts)], name), "/")
}

// Lstat tells the kind of name, below the cursor, without following a
// symlink.
func (c *Cursor) Lstat(name string) (Kind, error) {
	st, err := c.root.Lstat(c.path(name))
	if err != nil {
		return KindOther, err
	}
	return kindOf(st.Mode()), nil
}

// Readlink returns the text of the symlink name below the cursor.
func (c *Cursor) Readlink(name string) (string, error) { return c.root.Readlink(c.path(name)) }

// Down enters the directory name. A symlink in its place fails with ELOOP,
// anything else that is not a directory with ENOTDIR.
func (c *Cursor) Down(name string) error {
	k, err := c.Lstat(name)
	switch {
	case err != nil:
		return err
	case k == KindSymlink:
		return syscall.ELOOP
	case k != KindDir:
		return syscall.ENOTDIR
	}
	c.parts = append(c.parts, name)
	return nil
}

// ReadDir lists the directory the cursor is at, without "." and "..".
func (c *Cursor) ReadDir() ([]DirEntry, error) {
	f, err := c.root.Open(joinRel(c.parts))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]DirEntry, len(des))
	for i, de := range des {
		out[i] = DirEntry{Name: de.Name(), Type: de.Type()}
	}
	return out, nil
}

// openReader opens the regular file name below the cursor as
// Dir.openReader opens a rel.
func (c *Cursor) openReader(name, _ string, _ bool) (*FileReader, error) {
	d := Dir{root: c.root}
	return d.openReader(c.path(name), false)
}

// Up leaves the directory the cursor is at for its parent.
func (c *Cursor) Up() {
	if len(c.parts) > 0 {
		c.parts = c.parts[:len(c.parts)-1]
	}
}

// Reset moves the cursor back to the root.
func (c *Cursor) Reset() { c.parts = c.parts[:0] }

// Close does nothing: a Cursor holds no descriptors here.
func (c *Cursor) Close() {}

// beneath reports that there is no one-call walk here.
func (c *Cursor) beneath(string) (bool, error) { return false, nil }

// Lstat describes rel without following a final symlink.
func (d *Dir) Lstat(rel string) (os.FileInfo, error) { return d.root.Lstat(rel) }

// Readlink returns the text of the symlink rel.
func (d *Dir) Readlink(rel string) (string, error) { return d.root.Readlink(rel) }

// OpenFile opens the regular file rel with flag and, when creating, perm,
// refusing what is not a regular file before and after the open.
func (d *Dir) OpenFile(rel string, flag int, perm os.FileMode) (*os.File, error) {
	if dir, _ := Split(rel); dir != "." {
		if st, err := d.root.Stat(dir); err != nil || !st.IsDir() {
			if err == nil {
				err = syscall.ENOTDIR
			}
			return nil, &os.PathError{Op: "open", Path: rel, Err: ParentError{Err: err}}
		}
	}
	if st, err := d.root.Lstat(rel); err == nil && !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, &os.PathError{Op: "open", Path: rel, Err: syscall.EISDIR}
		}
		return nil, &os.PathError{Op: "open", Path: rel, Err: ErrNotRegular}
	}
	f, err := d.root.OpenFile(rel, flag, perm)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: rel, Err: ErrNotRegular}
	}
	return f, nil
}

// openReader opens the regular file rel for reading, as OpenFile does. A
// found file is opened as any other: the type is checked on the open file
// alone here.
func (d *Dir) openReader(rel string, _ bool) (*FileReader, error) {
	f, err := d.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return walk.NewStream(f, st.Size()), nil
}

// MkdirAll creates rel and its missing parents with perm (less the umask).
// created says whether this call made any directory.
func (d *Dir) MkdirAll(rel string, perm os.FileMode) (created bool, err error) {
	if st, err := d.root.Stat(rel); err == nil && st.IsDir() {
		return false, nil
	}
	err = d.root.MkdirAll(rel, perm)
	if errors.Is(err, os.ErrExist) {
		err = &os.PathError{Op: "mkdir", Path: rel, Err: syscall.ENOTDIR}
	}
	return err == nil, err
}

// Rename renames from to to, replacing what is there.
func (d *Dir) Rename(from, to string) error { return d.root.Rename(from, to) }

// Remove removes the file or empty directory rel.
func (d *Dir) Remove(rel string) error { return d.root.Remove(rel) }

// walkRoot lends a walk (package walk) the Dir's os.Root.
func (d *Dir) walkRoot() (*os.Root, func(), error) {
	r, err := d.lazy.get()
	return r, func() {}, err
}
