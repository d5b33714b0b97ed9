//go:build unix

package walk

import (
	"os"

	"golang.org/x/sys/unix"
)

// sysDir is a directory descriptor.
type sysDir int

// NewAt starts a walk of the directory dir (slash-separated, relative to
// the directory open as dirfd, without "." or ".." components; "" or "." for
// that directory itself), whose entries get paths dir/name. The directory is
// reached one component at a time, as the walk goes on from it: a component
// that is a symlink fails the walk, whatever it points to. state is the
// directory's state, returned by State for its entries.
//
// dirfd stays the caller's: the walk opens a descriptor of its own on it, one
// system call where an os.Root's Open makes an os.File (four more).
func NewAt[S any](dirfd int, dir string, state S) (*Walker[S], error) {
	w, _, err := newAt(dirfd, dir, state, nil)
	return w, err
}

// NewTrackedAt starts a walk like NewAt and returns the directory's stamp,
// taken before the walk reads it. When that stamp is last, nothing has
// changed since a walk returned last: the directory is not read, and the
// Walker is nil.
//
// The stamp covers what the walk shows (see Tracked): a listing of the
// directory may be kept under it and shown again for as long as NewTrackedAt
// returns the same stamp.
func NewTrackedAt[S any](dirfd int, dir string, state S, last Stamp) (*Walker[S], Stamp, error) {
	return newAt(dirfd, dir, state, &last)
}

// newAt opens the directory dirfd again for the walk begin starts.
func newAt[S any](dirfd int, dir string, state S, last *Stamp) (*Walker[S], Stamp, error) {
	top, err := openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, Stamp{}, &os.PathError{Op: "open", Path: ".", Err: err}
	}
	return begin(sysDir(top), dir, state, last)
}

// openDir opens the subdirectory name, failing if it is a symlink.
func (d sysDir) openDir(name string) (sysDir, error) {
	fd, err := openat(int(d), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	return sysDir(fd), err
}

// lstat describes the entry at name (a path relative to d) without
// following a final symlink.
func (d sysDir) lstat(name string) (Type, int64, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(int(d), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			return modeType(uint32(st.Mode)), st.Size, nil
		}
		if err != unix.EINTR {
			return 0, 0, err
		}
	}
}

func (d sysDir) close() { unix.Close(int(d)) }

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// modeType sorts a stat mode into a Type.
func modeType(m uint32) Type {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return Regular
	case unix.S_IFDIR:
		return Dir
	case unix.S_IFLNK:
		return Symlink
	}
	return Other
}
