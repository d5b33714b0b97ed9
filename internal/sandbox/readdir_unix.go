//go:build unix && !linux

package sandbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// ReadDir lists the directory the cursor is at, in the order the file
// system keeps it, without "." and "..". The error is the errno of the open
// or of the listing.
func (c *Cursor) ReadDir() ([]DirEntry, error) {
	fd, err := c.openListing()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	// Names only: os.File.ReadDir would look up an entry of unknown type by
	// a path, so each type comes from fstatat on the listed directory.
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	out := make([]DirEntry, 0, len(names))
	for _, name := range names {
		var st unix.Stat_t
		if err := RetryEINTR(func() error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
			continue // gone since the listing
		}
		out = append(out, DirEntry{Name: name, Type: statInfo(name, &st).Mode().Type()})
	}
	return out, nil
}

// unwrapPathError drops the *os.PathError an os.File adds, whose path would
// be the listing's "." rather than anything the caller knows.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
