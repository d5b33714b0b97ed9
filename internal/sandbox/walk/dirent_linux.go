package walk

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// direntBuf is the listing buffer size: large enough that most directories
// are listed in one getdents64 call plus the empty one that ends it.
const direntBuf = 32 << 10

// readDir lists the directory open as fd with getdents64, appending to out,
// and stops once out holds more than max entries. Types the file system does
// not report (DT_UNKNOWN) are looked up with fstatat, without following
// symlinks.
func readDir(fd int, buf *[]byte, out []dirent, max int) ([]dirent, error) {
	if len(*buf) < direntBuf {
		*buf = make([]byte, direntBuf)
	}
	b := *buf
	for {
		n, err := unix.Getdents(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		out = parseDirents(fd, b[:n], out)
		if len(out) > max {
			return out[:max+1], nil
		}
	}
}

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	offIno    = unsafe.Offsetof(unix.Dirent{}.Ino)
	offReclen = unsafe.Offsetof(unix.Dirent{}.Reclen)
	offType   = unsafe.Offsetof(unix.Dirent{}.Type)
	offName   = unsafe.Offsetof(unix.Dirent{}.Name)
)

func parseDirents(fd int, b []byte, out []dirent) []dirent {
	for len(b) > int(offName) {
		reclen := int(binary.NativeEndian.Uint16(b[offReclen:]))
		if reclen <= int(offName) || reclen > len(b) {
			break
		}
		rec := b[:reclen]
		b = b[reclen:]
		if binary.NativeEndian.Uint64(rec[offIno:]) == 0 {
			continue
		}
		name := rec[offName:]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.')) {
			continue
		}
		s := string(name)
		out = append(out, dirent{name: s, typ: direntType(fd, s, rec[offType])})
	}
	return out
}

func direntType(fd int, name string, t uint8) Type {
	switch t {
	case unix.DT_REG:
		return Regular
	case unix.DT_DIR:
		return Dir
	case unix.DT_LNK:
		return Symlink
	case unix.DT_UNKNOWN:
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return Other
		}
		return modeType(uint32(st.Mode))
	}
	return Other
}
