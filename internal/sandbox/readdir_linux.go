package sandbox

import (
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox/getdents"
)

// ReadDir lists the directory the cursor is at, in the order the file
// system keeps it, without "." and "..". The error is the errno of the open
// or of the listing.
func (c *Cursor) ReadDir() ([]DirEntry, error) {
	fd, err := openListing(c.at())
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// Most directories fit in one getdents64 call plus the empty one that
	// ends the listing.
	var out []DirEntry
	err = getdents.List(fd, make([]byte, 8<<10), func(b []byte) bool {
		getdents.EachName(b, func(name string, typ uint8) {
			out = append(out, DirEntry{Name: name, Type: direntMode(fd, name, typ)})
		})
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// direntMode is the type of an entry. A file system that does not report
// types (DT_UNKNOWN) is asked with fstatat on the listed directory itself,
// never through a path.
func direntMode(fd int, name string, t uint8) fs.FileMode {
	switch t {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_UNKNOWN:
		if st, err := lstatAt(fd, name); err == nil {
			return fileMode(&st).Type()
		}
	}
	return fs.ModeIrregular
}
