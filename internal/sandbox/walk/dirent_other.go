//go:build unix && !linux

package walk

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readDir lists the directory open as fd through a duplicate descriptor, so
// that the os.File doing the listing can own and close it. It stops once out
// holds more than max entries.
func readDir(fd int, _ *[]byte, out []dirent, max int) ([]dirent, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return out, err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	des, err := f.ReadDir(max + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return out, err
	}
	for _, de := range des {
		out = append(out, dirent{name: de.Name(), typ: typeOf(de.Type())})
	}
	return out, nil
}

func typeOf(m os.FileMode) Type {
	switch {
	case m.IsRegular():
		return Regular
	case m&os.ModeDir != 0:
		return Dir
	case m&os.ModeSymlink != 0:
		return Symlink
	}
	return Other
}
