package sandbox

import (
	"encoding/binary"
	"io/fs"
	"unsafe"

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

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	direntIno    = unsafe.Offsetof(unix.Dirent{}.Ino)
	direntReclen = unsafe.Offsetof(unix.Dirent{}.Reclen)
	direntType   = unsafe.Offsetof(unix.Dirent{}.Type)
	direntName   = unsafe.Offsetof(unix.Dirent{}.Name)
)

func parseDirents(fd int, b []byte, out []DirEntry) []DirEntry {
	for len(b) > int(direntName) {
		reclen := int(binary.NativeEndian.Uint16(b[direntReclen:]))
		if reclen <= int(direntName) || reclen > len(b) {
			break
		}
		rec := b[:reclen]
		b = b[reclen:]
		if binary.NativeEndian.Uint64(rec[direntIno:]) == 0 {
			continue
		}
		name := rec[direntName:]
		for i, ch := range name {
			if ch == 0 {
				name = name[:i]
				break
			}
		}
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.')) {
			continue
		}
		s := string(name)
		out = append(out, DirEntry{Name: s, Type: direntMode(fd, s, rec[direntType])})
	}
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
		var st unix.Stat_t
		if err := RetryEINTR(func() error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err == nil {
			return statInfo(name, &st).Mode().Type()
		}
	}
	return fs.ModeIrregular
}
