package walk

import "os"

// Open opens the file for reading in sequence or at offsets, the way Read
// opens it (no symlink followed, no blocking, a regular file or
// ErrNotRegular), for a caller that streams it rather than holding it whole.
// The Stream must be closed; the File may be closed before it.
func (f *File) Open() (*Stream, error) {
	if f.d == nil {
		return nil, &os.PathError{Op: "open", Path: f.path, Err: os.ErrClosed}
	}
	return f.d.sys.openStream(f.name, f.path)
}
