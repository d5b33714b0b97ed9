//go:build unix && !linux

package walk

import (
	"os"

	"golang.org/x/sys/unix"
)

// dirFile opens the directory for listing: a duplicate descriptor, which the
// os.File can own and close.
func (d sysDir) dirFile() (*os.File, error) {
	dup, err := unix.FcntlInt(uintptr(d), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(dup), ""), nil
}
