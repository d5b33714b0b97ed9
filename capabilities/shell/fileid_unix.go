//go:build unix

package shell

import (
	"io/fs"
	"syscall"
)

// idOf is the file fi describes, as its device and inode number name it.
func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}
