package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenReal opens the directory at the absolute path p, symlinks followed,
// and returns its real path as the kernel names the directory it reached,
// held twice: as an os.Root and as a Dir on that one directory (the Root is
// opened through the Dir's descriptor, so a rename meanwhile cannot make them
// differ). That is an open, a readlink and the Root's open and fstat, where
// resolving p a component at a time costs a stat per component before the
// opens. ok is false when the kernel's name cannot be had or trusted (no
// /proc, a directory removed or outside the process's root, any error): the
// caller then resolves p itself, which also words what is wrong.
func OpenReal(p string) (d *Dir, root *os.Root, real string, ok bool) {
	var fd int
	err := RetryEINTR(func() (err error) {
		fd, err = unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, nil, "", false
	}
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	real, err = Readlinkat(unix.AT_FDCWD, proc)
	// The kernel marks a removed directory " (deleted)" and one outside the
	// process's root "(unreachable)"; a name that is not clean and absolute
	// is not taken either.
	if err != nil || !filepath.IsAbs(real) || filepath.Clean(real) != real || strings.HasSuffix(real, " (deleted)") {
		unix.Close(fd)
		return nil, nil, "", false
	}
	root, err = os.OpenRoot(proc)
	if err != nil {
		unix.Close(fd)
		return nil, nil, "", false
	}
	return &Dir{fd: fd}, root, real, true
}
