package sandbox

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	direntIno    = unsafe.Offsetof(unix.Dirent{}.Ino)
	direntReclen = unsafe.Offsetof(unix.Dirent{}.Reclen)
	direntType   = unsafe.Offsetof(unix.Dirent{}.Type)
	direntName   = unsafe.Offsetof(unix.Dirent{}.Name)
)

// eachDirent calls fn with each live entry of b, what one getdents64 call
// filled ("." and ".." included): the name as b[start:end] and its d_type.
// Both listings parse through it, ReadDir and ListRegular.
func eachDirent(b []byte, fn func(start, end int, typ uint8)) {
	for off := 0; len(b)-off > int(direntName); {
		rec := b[off:]
		reclen := int(binary.NativeEndian.Uint16(rec[direntReclen:]))
		if reclen <= int(direntName) || reclen > len(rec) {
			return
		}
		start := off + int(direntName)
		off += reclen
		if binary.NativeEndian.Uint64(rec[direntIno:]) == 0 {
			continue
		}
		end := start
		for end < off && b[end] != 0 {
			end++
		}
		fn(start, end, rec[direntType])
	}
}
