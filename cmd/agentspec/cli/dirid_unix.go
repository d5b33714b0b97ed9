//go:build unix

package cli

import (
	"os"
	"syscall"
)

// dirIdentity is what tells the directory dir apart from every other, given
// st, its os.Stat: the device and inode the stat reached, whatever symlinks
// or spelling led there. Reading it off the stat already made costs nothing,
// where resolving the path would stat every component of it again, for each
// of a batch's thousands of workspaces.
func dirIdentity(dir string, st os.FileInfo) any {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return [2]uint64{uint64(s.Dev), uint64(s.Ino)}
	}
	return realPath(dir)
}
