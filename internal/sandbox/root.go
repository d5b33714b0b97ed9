package sandbox

import (
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

// A Dir also holds an os.Root on the same directory, opened when first asked
// for: FS gives its reads, which follow a symlink as long as it stays
// beneath the root, and where there is no openat the walker reads through
// it (see package walk; on Unix a walk starts from the Dir's descriptor). A
// job that never asks for it spares the open, stat and close.
type lazyRoot struct {
	once sync.Once
	open func() (*os.Root, error) // nil once given a root
	root *os.Root
	err  error
}

// get returns the os.Root, opening it at the first call.
func (l *lazyRoot) get() (*os.Root, error) {
	l.once.Do(func() {
		if l.open != nil {
			l.root, l.err = l.open()
		}
	})
	return l.root, l.err
}

// close closes the os.Root if it was opened; it cannot be opened after.
func (l *lazyRoot) close() {
	l.once.Do(func() { l.err = os.ErrClosed })
	if l.root != nil {
		l.root.Close()
	}
}

// OpenRoot holds the directory at path through an os.Root, which follows
// symlinks in path as os.OpenRoot does; nothing below it is ever followed
// but by FS. The Dir owns the root.
func OpenRoot(path string) (*Dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	d, err := openOSRoot(r)
	if err != nil {
		r.Close()
		return nil, err
	}
	d.lazy.root = r
	return d, nil
}

// FS reads the tree as os.Root does: a symlink is followed while it stays
// beneath the root, never out of it. The workspace checks read a job's
// output files so, where a link between them is the job's own business.
func (d *Dir) FS() (fs.FS, error) {
	r, err := d.lazy.get()
	if err != nil {
		return nil, err
	}
	return r.FS(), nil
}

// Walk returns a cursor at the directory rel, reached without following a
// symlink: in one openat2 call where the kernel has it, component by
// component otherwise, each checked to be a directory and not a symlink as
// the cursor goes down. The error is the errno of the step that failed.
func (d *Dir) Walk(rel string) (Cursor, error) {
	c := d.Cursor()
	if rel == "." {
		return c, nil
	}
	ok, err := c.beneath(rel)
	if !ok {
		for name := range strings.SplitSeq(rel, "/") {
			if err = c.Down(name); err != nil {
				break
			}
		}
	}
	if err != nil {
		c.Close()
		return Cursor{}, err
	}
	return c, nil
}

// NewWalker starts a walk of the directory rel (package walk), whose
// directories carry state.
func NewWalker[S any](d *Dir, rel string, state S) (*walk.Walker[S], error) {
	top, done, err := d.walkRoot()
	if err != nil {
		return nil, err
	}
	defer done()
	return walk.NewAt(top, rel, state)
}

// NewTrackedWalker starts a walk of the directory rel like NewWalker, and
// returns its stamp; when that is last, the directory is unchanged and not
// read, and the Walker is nil (walk.NewTrackedAt). Where no directory is
// tracked the stamp is zero.
func NewTrackedWalker[S any](d *Dir, rel string, state S, last walk.Stamp) (*walk.Walker[S], walk.Stamp, error) {
	top, done, err := d.walkRoot()
	if err != nil {
		return nil, walk.Stamp{}, err
	}
	defer done()
	return walk.NewTrackedAt(top, rel, state, last)
}

// FileReader is a regular file open for reading, read as the walk package
// reads the files it finds: on unix through the bare descriptor OpenReader
// made, no os.File, so none of the fcntl calls and poller bookkeeping that
// come with one.
type FileReader = walk.Stream

// OpenReader opens the regular file rel for reading, as OpenFile does, but
// keeps the bare descriptor: see FileReader.
func (d *Dir) OpenReader(rel string) (*FileReader, error) { return d.openReader(rel, false) }

// OpenFoundReader is OpenReader for a rel that Resolve has just found to be
// a regular file (FoundFile): that lstat stands for the one OpenReader makes
// before opening, and the type is still checked on the descriptor before
// anything is read.
func (d *Dir) OpenFoundReader(rel string) (*FileReader, error) { return d.openReader(rel, true) }

// OpenReader opens the regular file name, in the directory the cursor is
// at, as Dir.OpenReader opens a rel: a caller reading many files of one
// directory walks to it once.
func (c *Cursor) OpenReader(name string) (*FileReader, error) { return c.openReader(name, name, false) }

// OpenFoundReader is OpenReader for a name just found to be a regular file,
// by an lstat or by the directory's listing, as Dir.OpenFoundReader is for a
// rel.
func (c *Cursor) OpenFoundReader(name string) (*FileReader, error) {
	return c.openReader(name, name, true)
}

// WriteFile writes data to the regular file rel, created with perm (less
// the umask) if it is missing and truncated if not, through OpenFile: never
// through a symlink.
func (d *Dir) WriteFile(rel string, data []byte, perm os.FileMode) error {
	f, err := d.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
