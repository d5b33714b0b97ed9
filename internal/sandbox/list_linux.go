package sandbox

import (
	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox/getdents"
)

// ListRegular lists the directory the cursor is at with getdents64, a few
// system calls however many names it holds: each regular file maps to true,
// each name whose type the file system does not report (DT_UNKNOWN) to
// false, for the caller to look up with Regular. nil means the directory
// could not be listed. buf is the listing buffer, kept from call to call.
func (c *Cursor) ListRegular(buf *[]byte) map[string]bool { return listRegular(c.at(), buf) }

// listRegular lists the regular files (and those of unknown type) in the
// directory dirfd, which may be an O_PATH descriptor, or returns nil.
func listRegular(dirfd int, buf *[]byte) map[string]bool {
	fd, err := openListing(dirfd)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	if len(*buf) == 0 {
		*buf = make([]byte, 32<<10)
	}
	names := map[string]bool{}
	err = getdents.List(fd, *buf, func(b []byte) bool {
		s := string(b) // one string per batch; the names are slices of it
		getdents.Each(b, func(start, end int, typ uint8) {
			if typ == unix.DT_REG || typ == unix.DT_UNKNOWN {
				names[s[start:end]] = typ == unix.DT_REG
			}
		})
		return true
	})
	if err != nil {
		return nil
	}
	return names
}
