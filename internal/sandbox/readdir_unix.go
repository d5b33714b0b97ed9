//go:build unix && !linux

package sandbox

import (
	"errors"
	"os"
)

// ReadDir lists the directory the cursor is at, in the order the file
// system keeps it, without "." and "..". The error is the errno of the open
// or of the listing.
func (c *Cursor) ReadDir() ([]DirEntry, error) {
	fd, err := openListing(c.at())
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	// Names only, each type from fstatat on the listed directory: an entry
	// that cannot be looked up is dropped, where os.File.ReadDir fails the
	// whole listing on any error but the entry's being gone.
	names, err := f.Readdirnames(-1)
	if err != nil {
		// Drop the *os.PathError an os.File adds, whose path would be the
		// listing's "." rather than anything the caller knows.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, err
	}
	out := make([]DirEntry, 0, len(names))
	for _, name := range names {
		st, err := lstatAt(fd, name)
		if err != nil {
			continue // gone since the listing
		}
		out = append(out, DirEntry{Name: name, Type: fileMode(&st).Type()})
	}
	return out, nil
}
