package getdents

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	offIno    = unsafe.Offsetof(unix.Dirent{}.Ino)
	offReclen = unsafe.Offsetof(unix.Dirent{}.Reclen)
	offType   = unsafe.Offsetof(unix.Dirent{}.Type)
	offName   = unsafe.Offsetof(unix.Dirent{}.Name)
)

// Each calls fn with each live entry of b, what one getdents64 call filled
// ("." and ".." included): the name as b[start:end] and its d_type.
func Each(b []byte, fn func(start, end int, typ uint8)) {
	for off := 0; len(b)-off > int(offName); {
		rec := b[off:]
		reclen := int(binary.NativeEndian.Uint16(rec[offReclen:]))
		if reclen <= int(offName) || reclen > len(rec) {
			return
		}
		start := off + int(offName)
		off += reclen
		if binary.NativeEndian.Uint64(rec[offIno:]) == 0 {
			continue
		}
		end := start
		for end < off && b[end] != 0 {
			end++
		}
		fn(start, end, rec[offType])
	}
}

// List reads the directory open as fd with getdents64 into buf until its
// end, calling batch with what each call filled, for Each or EachName;
// batch returning false ends the listing early. EINTR is retried.
func List(fd int, buf []byte, batch func(b []byte) bool) error {
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 || !batch(buf[:n]) {
			return nil
		}
	}
}

// EachName calls fn with the name and d_type of each live entry of b but
// "." and "..".
func EachName(b []byte, fn func(name string, typ uint8)) {
	Each(b, func(start, end int, typ uint8) {
		name := b[start:end]
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.')) {
			return
		}
		fn(string(name), typ)
	})
}
