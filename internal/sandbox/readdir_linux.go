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
	buf := make([]byte, 8<<10)
	var out []DirEntry
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		out = parseDirents(fd, buf[:n], out)
	}
}

func parseDirents(fd int, b []byte, out []DirEntry) []DirEntry {
	getdents.Each(b, func(start, end int, typ uint8) {
		name := b[start:end]
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.')) {
			return
		}
		s := string(name)
		out = append(out, DirEntry{Name: s, Type: direntMode(fd, s, typ)})
	})
	return out
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
			return statInfo(name, &st).Mode().Type()
		}
	}
	return fs.ModeIrregular
}
