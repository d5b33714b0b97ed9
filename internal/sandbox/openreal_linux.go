package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenReal opens the directory at the absolute path p, symlinks followed,
// and returns its real path as the kernel names the directory it reached.
// That is an open and a readlink, where resolving p a component at a time
// costs a stat per component before the open. ok is false when the kernel's
// name cannot be had or trusted (no /proc, a directory removed or outside
// the process's root, any error): the caller then resolves p itself, which
// also words what is wrong.
func OpenReal(p string) (d *Dir, real string, ok bool) {
	fd, err := openat(unix.AT_FDCWD, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", false
	}
	real, err = readlinkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd))
	// The kernel marks a removed directory " (deleted)" and one outside the
	// process's root "(unreachable)"; a name that is not clean and absolute
	// is not taken either.
	if err != nil || !filepath.IsAbs(real) || filepath.Clean(real) != real || strings.HasSuffix(real, " (deleted)") {
		unix.Close(fd)
		return nil, "", false
	}
	d = &Dir{fd: fd}
	d.lazy.open = func() (*os.Root, error) { return d.osRoot(real) }
	return d, real, true
}

// osRoot opens an os.Root on the directory the Dir holds, through the
// kernel's name for its descriptor, so that the two cannot differ whatever
// was renamed since; by path where /proc is missing.
func (d *Dir) osRoot(path string) (*os.Root, error) {
	if r, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(d.fd)); err == nil {
		return r, nil
	}
	return os.OpenRoot(path)
}
