package walk

import (
	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox/getdents"
)

// direntBuf is the listing buffer size: large enough that most directories
// are listed in one getdents64 call plus the empty one that ends it.
const direntBuf = 32 << 10

// list returns the directory's entries, unsorted, read with getdents64 into
// buf, and stops once it has more than max. Types the file system does not
// report (DT_UNKNOWN) are looked up with fstatat, without following symlinks.
func (d sysDir) list(buf *[]byte, max int) ([]dirent, error) {
	if len(*buf) < direntBuf {
		*buf = make([]byte, direntBuf)
	}
	var out []dirent
	err := getdents.List(int(d), *buf, func(b []byte) bool {
		getdents.EachName(b, func(name string, typ uint8) {
			out = append(out, dirent{name: name, typ: d.direntType(name, typ)})
		})
		return len(out) <= max
	})
	if len(out) > max {
		out = out[:max+1]
	}
	return out, err
}

func (d sysDir) direntType(name string, t uint8) Type {
	switch t {
	case unix.DT_REG:
		return Regular
	case unix.DT_DIR:
		return Dir
	case unix.DT_LNK:
		return Symlink
	case unix.DT_UNKNOWN:
		if typ, _, err := d.lstat(name); err == nil {
			return typ
		}
	}
	return Other
}
