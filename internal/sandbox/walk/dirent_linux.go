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
	var out []dirent
	if len(*buf) < direntBuf {
		*buf = make([]byte, direntBuf)
	}
	b := *buf
	for {
		n, err := unix.Getdents(int(d), b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		out = d.parseDirents(b[:n], out)
		if len(out) > max {
			return out[:max+1], nil
		}
	}
}

func (d sysDir) parseDirents(b []byte, out []dirent) []dirent {
	getdents.Each(b, func(start, end int, typ uint8) {
		name := b[start:end]
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.')) {
			return
		}
		s := string(name)
		out = append(out, dirent{name: s, typ: d.direntType(s, typ)})
	})
	return out
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
