package walk

import (
	"errors"
	"os"
)

// ErrNotRegular is returned for an entry that is no longer a regular file
// when it is opened (a FIFO, a directory, a symlink swapped in).
var ErrNotRegular = errors.New("not a regular file")

// File is a regular file found by a walk, opened through its directory when
// it is read.
type File struct {
	d    *dir
	name string
	path string
}

// Open opens the file for reading in sequence or at offsets, without
// following a symlink or blocking: it must be a regular file, else the error
// is ErrNotRegular. The Stream must be closed; the File may be closed before
// it.
func (f *File) Open() (*Stream, error) {
	if f.d == nil {
		return nil, &os.PathError{Op: "open", Path: f.path, Err: os.ErrClosed}
	}
	return f.d.sys.openStream(f.name, f.path)
}

// Close lets go of the file's directory.
func (f *File) Close() {
	if f.d != nil {
		f.d.release()
		f.d = nil
	}
}
