package filesystem

import (
	"os"
	"syscall"
)

// watchTarget names the directory rel by a descriptor the no-follow walk
// reached, held until release; without procfs, by its path (see
// watch_dirs.go).
func (fs *FS) watchTarget(rel string) (watchTarget, error) {
	n, ok, err := fs.dir.NameDir(rel)
	switch {
	case !ok:
		return fs.pathTarget(rel)
	case err != nil:
		return watchTarget{}, err
	}
	return watchTarget{path: n.Path, id: dirID{dev: n.Dev, ino: n.Ino}, release: n.Release}, nil
}

// pathID identifies the directory st by device and inode, as inotify does.
func pathID(_ string, st os.FileInfo) dirID {
	s := st.Sys().(*syscall.Stat_t)
	return dirID{dev: uint64(s.Dev), ino: uint64(s.Ino)}
}
