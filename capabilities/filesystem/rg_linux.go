package filesystem

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// rgListing is what a directory the rg checks entered holds: its regular
// files, listed with getdents64 once a few paths rg printed in it have been
// checked. Listing a directory costs a few system calls where checking a
// file costs one, so a directory rg prints many files of (list_files prints
// them all) is listed, and one it prints a file or two of (grep, mostly) is
// not, however large.
type rgListing struct {
	looked int // names looked up one by one
	read   bool
	// name -> true for a regular file, false for a type the file system
	// does not report (looked up with fstatat); nil if it could not be
	// listed, when every name is looked up.
	names map[string]bool
}

// rgListAfter is how many names are looked up one by one in a directory
// before it is listed instead.
const rgListAfter = 4

// regular reports whether name, in the directory c is at (which l
// describes), is a regular file.
func (l *rgListing) regular(c *sandbox.Cursor, name string, buf *[]byte) bool {
	if !l.read && l.looked == rgListAfter {
		l.read = true
		l.names = listRegular(c.At(), buf)
	}
	if l.names == nil {
		l.looked++
		return c.Regular(name)
	}
	known, ok := l.names[name]
	return ok && (known || c.Regular(name))
}

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	direntIno    = unsafe.Offsetof(unix.Dirent{}.Ino)
	direntReclen = unsafe.Offsetof(unix.Dirent{}.Reclen)
	direntType   = unsafe.Offsetof(unix.Dirent{}.Type)
	direntName   = unsafe.Offsetof(unix.Dirent{}.Name)
)

// listRegular lists the regular files (and those of unknown type) in the
// directory dirfd, which may be an O_PATH descriptor, or returns nil.
func listRegular(dirfd int, buf *[]byte) map[string]bool {
	var fd int
	err := sandbox.RetryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	if len(*buf) == 0 {
		*buf = make([]byte, 32<<10)
	}
	names := map[string]bool{}
	for {
		var n int
		err := sandbox.RetryEINTR(func() (err error) {
			n, err = unix.Getdents(fd, *buf)
			return err
		})
		if err != nil {
			return nil
		}
		if n <= 0 {
			return names
		}
		// One string per batch; the names are slices of it.
		b, s := (*buf)[:n], string((*buf)[:n])
		for off := 0; len(b)-off > int(direntName); {
			rec := b[off:]
			reclen := int(binary.NativeEndian.Uint16(rec[direntReclen:]))
			if reclen <= int(direntName) || reclen > len(rec) {
				break
			}
			start := off + int(direntName)
			typ := rec[direntType]
			off += reclen
			if binary.NativeEndian.Uint64(rec[direntIno:]) == 0 || (typ != unix.DT_REG && typ != unix.DT_UNKNOWN) {
				continue
			}
			end := start
			for end < off && b[end] != 0 {
				end++
			}
			name := s[start:end]
			names[name] = typ == unix.DT_REG
		}
	}
}
